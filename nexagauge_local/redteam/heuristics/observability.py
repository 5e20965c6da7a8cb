"""Observable geometry of a red-team run (the report's red-team panel).

Each case becomes a short document (category, severity, pass/fail, a risk bucket, a task/input
snapshot, the judge's explanation when there is one, matched pattern labels); TF-IDF + truncated
SVD embeds it, KMeans clusters the embedding, and mutual information says whether clusters line
up with threat category, severity or outcome. A separate 2-component SVD gives scatter
coordinates for plots only. Everything is seeded so two runs on the same input agree.

These are exploratory statistics, not causal claims: a cluster that lines up with a category
shows where failures gather, not why.

scikit-learn is imported where the block is computed, never at module level, and a run given a
memo folder keeps each block under a key of everything it is computed from (the documents,
the labels, the seed, this file and scikit-learn's version): re-scoring an unchanged dataset
reads the block back and never imports scikit-learn (~1.8 s on 2 busy cores).
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from nexagauge_local.memo import ResultMemo, dist_version, memo_key, source_digest
from nexagauge_local.redteam.heuristics.scoring import CaseScore

SNAPSHOT_CHARS = 400  # task/input window per case: long probes must not drown the labels
MAX_COMPONENTS = 32
N_INIT = 10
TOP_TERMS = 6


def _token(prefix: str, value: str) -> str:
    return f"{prefix}_" + "".join(ch if ch.isalnum() else "_" for ch in value.lower())


def case_document(score: CaseScore, explanation: str = "") -> str:
    """The text embedded for one case (the fields listed above)."""
    bucket = min(9, int(score.risk_score * 10))
    labels = " ".join(
        _token("sig", p) for p in (*score.matched_safe_patterns, *score.matched_unsafe_patterns)
    )
    parts = (
        _token("cat", score.category),
        _token("sev", score.severity),
        "outcome_pass" if score.passed else "outcome_fail",
        f"risk_b{bucket}",
        score.task[:SNAPSHOT_CHARS],
        score.probe_input[:SNAPSHOT_CHARS],
        explanation[:SNAPSHOT_CHARS],
        labels,
    )
    return " ".join(p for p in parts if p)


def _n_clusters(n: int, requested: int | None) -> int:
    k = requested if requested is not None else min(8, max(2, round(math.sqrt(n / 2))))
    return max(1, min(max(2, k), n - 1))


def _svd(x: Any, n_components: int, seed: int) -> tuple[np.ndarray, float | None]:
    """TruncatedSVD when the matrix allows it, else the dense matrix itself (degenerate input).

    The explained-variance ratio is ``None`` when undefined (all rows identical: zero variance).
    """
    n_features = x.shape[1]
    usable = min(n_components, n_features - 1)
    if usable < 1:
        return np.asarray(x.todense(), dtype=float), None
    from sklearn.decomposition import TruncatedSVD

    svd = TruncatedSVD(n_components=usable, random_state=seed, algorithm="randomized")
    with np.errstate(divide="ignore", invalid="ignore"):
        emb = svd.fit_transform(x)
        ratio = float(np.sum(svd.explained_variance_ratio_))
    return emb, ratio if math.isfinite(ratio) else None


def _mi(a: Sequence[Any], b: Sequence[Any]) -> dict[str, float]:
    from sklearn.metrics import mutual_info_score, normalized_mutual_info_score

    return {
        "mi": float(mutual_info_score(a, b)),
        "nmi": float(normalized_mutual_info_score(a, b)),
    }


def build_observability(
    scores: Sequence[CaseScore],
    explanations: dict[str, str] | None = None,
    min_cases: int = 5,
    seed: int = 0,
    n_clusters: int | None = None,
    memo_dir: str | os.PathLike[str] | None = None,
) -> dict[str, Any] | None:
    """The ``observability`` block, or ``None`` below ``min_cases`` cases (and always below 2).

    ``k = min(n_clusters or clamp(round(sqrt(n/2)), 2, 8), n - 1)``, an explicit ``n_clusters``
    being raised to at least 2; k is further capped by the number of distinct embedded points
    (identical cases form one cluster). MI is in nats, NMI in [0, 1] (arithmetic normalisation).
    With ``memo_dir`` the block is read from (or kept in) that folder, keyed by every input.
    """
    n = len(scores)
    if n < max(2, min_cases):
        return None
    explanations = explanations or {}
    docs = [case_document(s, explanations.get(s.case_id, "")) for s in scores]
    if memo_dir is None:
        return _compute(scores, docs, seed, n_clusters)
    memo = ResultMemo(memo_dir, ".json")
    key = memo_key(
        "observability", source_digest(__file__), dist_version("scikit-learn"),
        dist_version("numpy"), dist_version("scipy"), docs, [(s.case_id, s.category, s.severity, s.passed) for s in scores],
        seed, n_clusters,
    )
    block = memo.get_json(key)
    if not isinstance(block, dict):
        block = _compute(scores, docs, seed, n_clusters)
        memo.put_json(key, block)
    return block


def _compute(
    scores: Sequence[CaseScore], docs: list[str], seed: int, n_clusters: int | None
) -> dict[str, Any]:
    """TF-IDF, SVD, KMeans and mutual information over the case documents (scikit-learn)."""
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.text import TfidfVectorizer

    n = len(scores)
    vec = TfidfVectorizer(
        sublinear_tf=True, stop_words="english", token_pattern=r"(?u)\b\w\w+\b", max_features=20000
    )
    x = vec.fit_transform(docs)
    emb, explained = _svd(x, min(MAX_COMPONENTS, n - 1), seed)
    # unit rows: KMeans on cosine geometry, so long probes do not dominate by sheer length
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    emb_n = emb / np.where(norms > 0, norms, 1.0)

    k = _n_clusters(n, n_clusters)
    distinct = len(np.unique(np.round(emb_n, 12), axis=0))
    k = min(k, distinct)
    if k < 2:
        labels = np.zeros(n, dtype=int)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            labels = KMeans(n_clusters=k, n_init=N_INIT, random_state=seed).fit_predict(emb_n)

    xy, _ = _svd(x, 2, seed)
    if xy.shape[1] < 2:
        xy = np.hstack([xy, np.zeros((n, 2 - xy.shape[1]))])
    xy = xy[:, :2]

    terms = vec.get_feature_names_out()
    top_terms: dict[str, list[str]] = {}
    sizes: dict[str, int] = {}
    for c in range(int(labels.max()) + 1):
        mask = labels == c
        sizes[str(c)] = int(mask.sum())
        centroid = np.asarray(x[mask].mean(axis=0)).ravel()
        order = np.argsort(-centroid, kind="stable")[:TOP_TERMS]
        top_terms[str(c)] = [str(terms[i]) for i in order if centroid[i] > 0]

    cluster_ids = labels.tolist()
    return {
        "n_cases": n,
        "seed": seed,
        "n_clusters": int(labels.max()) + 1,
        "embedding": {
            "method": "tfidf+truncated_svd",
            "n_features": int(x.shape[1]),
            "n_components": int(emb.shape[1]),
            "explained_variance_ratio": explained,
        },
        "cluster_sizes": sizes,
        "top_terms": top_terms,
        "mutual_information": {
            "category": _mi(cluster_ids, [s.category for s in scores]),
            "severity": _mi(cluster_ids, [s.severity for s in scores]),
            "pass_fail": _mi(cluster_ids, [s.passed for s in scores]),
        },
        "points": [
            {
                "case_id": s.case_id,
                "cluster": int(labels[i]),
                "scatter_x": float(xy[i, 0]),
                "scatter_y": float(xy[i, 1]),
                "category": s.category,
                "severity": s.severity,
                "passed": s.passed,
            }
            for i, s in enumerate(scores)
        ],
    }
