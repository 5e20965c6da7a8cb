"""refalign on hand-made pairs with the real bundled embedding model."""

from __future__ import annotations

import numpy as np
import pytest

from nexagauge_local.embed import Embedder
from nexagauge_local.nodes.refiner import dedupe, mmr
from nexagauge_local.scoring.alignment import align, text_cosine


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder()


def _align(embedder: Embedder, out: list[str], ref: list[str], threshold: float = 0.8, rule="many_to_one"):
    whole = embedder.encode([" ".join(out), " ".join(ref)])
    return align(out, embedder.encode(out), ref, embedder.encode(ref), threshold,
                 global_cosine=text_cosine(whole[0], whole[1]), rule=rule)


def test_paraphrase_matches(embedder: Embedder) -> None:
    a = _align(embedder, ["The Eiffel Tower is located in Paris, France."],
               ["The Eiffel Tower stands in Paris, France."])
    assert a.precision == a.recall == a.f1 == 1.0
    assert a.matched[0]["similarity"] >= 0.8
    assert a.global_cosine > 0.8


def test_unrelated_does_not_match(embedder: Embedder) -> None:
    a = _align(embedder, ["The stock market fell sharply on Tuesday."],
               ["Photosynthesis turns light into chemical energy in plants."])
    assert a.f1 == 0.0
    assert a.missed == ["Photosynthesis turns light into chemical energy in plants."]
    assert a.extra == ["The stock market fell sharply on Tuesday."]
    assert a.global_cosine < 0.3


OUT_PARIS = ["The Eiffel Tower is located in Paris, France.", "The Eiffel Tower is in Paris."]
REF_PARIS = ["The Eiffel Tower stands in Paris, France.", "It was completed in 1889 for the World's Fair."]


def test_many_to_one_lets_two_outputs_share_a_reference(embedder: Embedder) -> None:
    a = _align(embedder, OUT_PARIS, REF_PARIS)
    # nexa-gauge with atomic_chunks false: each output unit is supported by its best reference
    # unit, reuse allowed, so both Paris outputs count; the 1889 reference is not covered
    assert a.matching == "many_to_one"
    assert len(a.matched) == 2 and {m["reference_unit"] for m in a.matched} == {REF_PARIS[0]}
    assert a.precision == 1.0 and a.recall == 0.5
    assert a.f1 == pytest.approx(2 / 3)
    assert a.missed == [REF_PARIS[1]] and a.extra == []


def test_one_to_one_matching_and_partial_recall(embedder: Embedder) -> None:
    a = _align(embedder, OUT_PARIS, REF_PARIS, rule="one_to_one")
    # nexa-gauge with atomic_chunks true: two output units about Paris cannot both claim the
    # single Paris reference unit
    assert len(a.matched) == 1
    assert a.precision == 0.5 and a.recall == 0.5
    assert a.missed == [REF_PARIS[1]]


def test_one_to_one_maximises_pairs_over_the_threshold() -> None:
    # the assignment with the most total similarity (diagonal, 1.5) has one pair over 0.6; the
    # anti-diagonal has two: nexa-gauge's augmenting-path matching counts two, and so do we
    out_v = np.eye(2, dtype=np.float64)
    sim = np.array([[1.0, 0.6], [0.6, 0.5]])
    a = align(["o1", "o2"], out_v, ["r1", "r2"], sim.T, 0.6, global_cosine=0.0, rule="one_to_one")
    assert (a.precision, a.recall) == (1.0, 1.0)
    assert {(m["output_unit"], m["reference_unit"]) for m in a.matched} == {("o1", "r2"), ("o2", "r1")}


def test_global_similarity_is_the_whole_text_cosine(embedder: Embedder) -> None:
    # nexa-gauge embeds each whole text (refalign.py _compute_embedding_metrics), not units
    out_text, ref_text = " ".join(OUT_PARIS), " ".join(REF_PARIS)
    a = _align(embedder, OUT_PARIS, REF_PARIS)
    v = embedder.encode([out_text, ref_text])
    assert a.global_cosine == pytest.approx(float(v[0] @ v[1]), abs=1e-6)
    mean_cos = embedder.encode(OUT_PARIS).mean(axis=0) @ embedder.encode(REF_PARIS).mean(axis=0)
    assert abs(a.global_cosine - float(mean_cos)) > 1e-4  # the old definition gives another figure


def test_text_cosine_clamps_to_unit_interval() -> None:
    assert text_cosine(np.array([1.0, 0.0]), np.array([-1.0, 0.0])) == 0.0
    assert text_cosine(np.array([2.0, 0.0]), np.array([1.0, 0.0])) == pytest.approx(1.0)
    assert text_cosine(np.zeros(2), np.array([1.0, 0.0])) == 0.0


def test_empty_sides() -> None:
    empty = np.zeros((0, 4), dtype=np.float32)
    a = align([], empty, ["x"], np.ones((1, 4), dtype=np.float32), 0.8, global_cosine=0.0)
    assert (a.precision, a.recall, a.f1) == (0.0, 0.0, 0.0)
    assert a.missed == ["x"]


def test_dedupe_drops_near_duplicates() -> None:
    v = np.array([[1.0, 0.0], [0.999, 0.0447], [0.0, 1.0]], dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    assert dedupe(v, 0.95) == [0, 2]


def test_mmr_picks_diverse_units() -> None:
    v = np.array([[1.0, 0.0], [0.99, 0.14], [0.0, 1.0], [0.7, 0.7]], dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    chosen = mmr(v, 2)
    assert len(chosen) == 2
    assert not {0, 1} <= set(chosen)  # never both of the near-identical pair


def test_whitespace_runs_do_not_change_a_whole_text_embedding(embedder: Embedder) -> None:
    # the node embeds " ".join(text.split()) so a one-chunk text hits the memo; nexa-gauge embeds
    # the raw text: MiniLM's tokenizer splits on any whitespace, so the vectors are the same
    raw = "  The Eiffel Tower\nstands in\tParis,  France.\n"
    v = embedder.encode([raw, " ".join(raw.split())])
    assert float(v[0] @ v[1]) == pytest.approx(1.0, abs=1e-6)
