"""refalign's units: nexa-gauge's by default (same scores on the same records), this project's
sentence groups on request. The expected figures are nexa-gauge 0.1.19's, from its own run on
the peer sample (docs/parity.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nexagauge_local import evaluate
from nexagauge_local.cli import main

PEER = Path("/work/shared/peer/sample.json")
ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "nexagauge_local" / "data" / "sample.jsonl"
# case: (nexa-gauge's precision, this tool's precision with sentence units); recall is 1.0
NEXA_GAUGE = {"shakespeare-hamlet-short": (0.5, 1.0), "bitcoin-economics-medium": (2 / 3, 1 / 3)}


def _refalign(units: str, **settings: Any) -> dict[str, dict[str, Any]]:
    records = [dict(r, refalign={"similarity_threshold": 0.6})
               for r in json.loads(PEER.read_text()) if r.get("case_id") in NEXA_GAUGE]  # fmt: skip
    out = evaluate(records, target="refalign", embed_dtype="float32", refalign_units=units,
                   **settings)  # fmt: skip
    return {rep["input"]["case_id"]: next(m for m in rep["refalign"]["metrics"]
                                          if m["name"] == "refalign")["result"][0]
            for rep in out.case_reports}  # fmt: skip


@pytest.mark.skipif(not PEER.exists(), reason="the peer sample is not on this machine")
def test_nexa_gauge_units_score_as_nexa_gauge_and_sentences_as_before() -> None:
    ng, sentences = _refalign("nexa-gauge"), _refalign("sentences")
    for case, (theirs, ours) in NEXA_GAUGE.items():
        assert ng[case]["units"] == "nexa-gauge" and sentences[case]["units"] == "sentences"
        assert ng[case]["precision"] == pytest.approx(theirs)
        assert sentences[case]["precision"] == pytest.approx(ours)
        assert ng[case]["recall"] == sentences[case]["recall"] == 1.0


@pytest.mark.skipif(not PEER.exists(), reason="the peer sample is not on this machine")
def test_output_top_k_caps_the_output_chunks() -> None:
    capped = _refalign("nexa-gauge", refalign_output_top_k=1)["bitcoin-economics-medium"]
    every = _refalign("nexa-gauge", refalign_output_top_k=0)["bitcoin-economics-medium"]
    n_capped = len(capped["matched"]) + len(capped["extra"])
    n_every = len(every["matched"]) + len(every["extra"])
    assert n_capped == 1 and n_every > 3  # 3 is the default cap


def test_cli_options_reach_the_run(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["run", "refalign", "--input", str(SAMPLE), "--limit", "3",
                                    "--output-dir", str(tmp_path / "o"), "--refalign-units",
                                    "sentences", "--refalign-output-top-k", "0"])  # fmt: skip
    assert res.exit_code == 0, res.output
    reports = [json.loads(p.read_text()) for p in (tmp_path / "o" / "case_report").glob("*.json")]
    units = {m["result"][0].get("units") for r in reports if "refalign" in r
             for m in r["refalign"]["metrics"] if m["name"] == "refalign" and m["result"]}  # fmt: skip
    assert units == {"sentences"}
    bad = CliRunner().invoke(main, ["run", "refalign", "--input", str(SAMPLE), "--output-dir",
                                    str(tmp_path / "p"), "--refalign-units", "words"])  # fmt: skip
    assert bad.exit_code == 2 and "words" in bad.output
