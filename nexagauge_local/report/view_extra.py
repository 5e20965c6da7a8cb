"""Optional sections fed by files other commands drop into the output directory:
agreement.json (`nexagauge-local agreement`) and compare.json (`nexagauge-local compare`).

compare.json is owned by another command, so it is read generically and every key may be
missing: rows come from `metrics` (a list, or a mapping keyed by "node.metric") or `rows`;
flipped cases are any list-valued row key whose name starts with "flipped", each item a case id
or an object with `case_id`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

COMPARE_COLUMNS = (
    "n_matched",
    "mean_a",
    "mean_b",
    "delta",
    "ci_low",
    "ci_high",
    "pass_rate_a",
    "pass_rate_b",
    "errors_a",
    "errors_b",
)
MAX_FLIPS_SHOWN = 25


def _linked(case_ids: list[str], anchors: Mapping[str, str]) -> list[tuple[str, str | None]]:
    return [(cid, anchors.get(cid)) for cid in case_ids]


def agreement_view(doc: Mapping[str, Any] | None, anchors: Mapping[str, str]) -> dict[str, Any]:
    if not doc:
        return {"present": False}
    rows = []
    for key, stats in (doc.get("metrics") or {}).items():
        if not isinstance(stats, Mapping):
            continue
        rows.append(
            {
                "key": key,
                **{
                    k: stats.get(k)
                    for k in (
                        "n",
                        "accuracy",
                        "precision",
                        "recall",
                        "f1",
                        "kappa",
                        "score_mae",
                        "judge_errors",
                    )
                },
                "matrix": stats.get("confusion_matrix") or [[0, 0], [0, 0]],
                "ranking": stats.get("ranking") if isinstance(stats.get("ranking"), Mapping)
                else None,
                "disagreements": [
                    {**d, "anchor": anchors.get(str(d.get("case_id")))}
                    for d in stats.get("disagreements") or []
                    if isinstance(d, Mapping)
                ],
            }
        )
    return {
        "present": True,
        "labels_file": doc.get("labels_file"),
        "created": doc.get("created"),
        "labels_total": doc.get("labels_total"),
        "labels_matched": doc.get("labels_matched"),
        "overall": doc.get("overall") or {},
        "rows": rows,
        "unmatched": doc.get("unmatched") or [],
        "unmatched_total": doc.get("unmatched_total", len(doc.get("unmatched") or [])),
        "warnings": [str(w) for w in doc.get("warnings") or []],
    }


def _compare_rows(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = doc.get("metrics", doc.get("rows"))
    if isinstance(raw, Mapping):
        return [{"key": k, **v} for k, v in raw.items() if isinstance(v, Mapping)]
    if isinstance(raw, list):
        return [r for r in raw if isinstance(r, Mapping)]
    return []


def _case_ids(items: Any) -> list[str]:
    if not isinstance(items, list):
        return []
    out = []
    for item in items:
        if isinstance(item, Mapping) and item.get("case_id") is not None:
            out.append(str(item["case_id"]))
        elif isinstance(item, str | int):
            out.append(str(item))
    return out


def compare_view(doc: Mapping[str, Any] | None, anchors: Mapping[str, str]) -> dict[str, Any]:
    if not doc:
        return {"present": False}
    rows = []
    for r in _compare_rows(doc):
        key = r.get("key") or ".".join(str(r[k]) for k in ("node", "metric") if r.get(k))
        flips = {
            name: _case_ids(value)
            for name, value in r.items()
            if name.startswith("flipped") and isinstance(value, list)
        }
        rows.append(
            {
                "key": key or "?",
                **{c: r.get(c) for c in COMPARE_COLUMNS},
                "flips": {
                    name.replace("_", " "): (_linked(ids[:MAX_FLIPS_SHOWN], anchors), len(ids))
                    for name, ids in flips.items()
                    if ids
                },
            }
        )
    facts = {
        k: v
        for k, v in doc.items()
        if isinstance(v, str | int | float | bool) and k not in ("metrics", "rows")
    }
    judge = doc.get("judge") if isinstance(doc.get("judge"), Mapping) else {}
    regression = doc.get("max_regression")
    return {
        "present": True,
        "facts": facts,
        "warnings": [str(w) for w in (judge or {}).get("warnings") or []],
        "regression": regression if isinstance(regression, Mapping) else None,
        "rows": rows,
    }
