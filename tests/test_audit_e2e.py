"""The audit library on a real output folder (public `evaluate` API, deterministic refmatch:
no judge needed), so the manifest and the reproduce comparison see real case reports."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from nexagauge_local import evaluate
from nexagauge_local.audit import (
    RunRecord,
    compare_runs,
    finalize_run,
    hash_input,
    read_manifest,
    verify,
)
from tests.test_audit_helpers import HOST

SAMPLE = Path(__file__).resolve().parents[1] / "nexagauge_local" / "data" / "sample.jsonl"


def test_real_run_manifest_verifies_and_reproduces(tmp_path):
    started = datetime.now(UTC)
    a, b = tmp_path / "a", tmp_path / "b"
    evaluate(SAMPLE, target="refmatch", output_dir=a, cache_dir=tmp_path / "cache")
    run = RunRecord(
        started_at=started,
        argv=["nexagauge-local", "run", str(SAMPLE), "--target", "refmatch"],
        settings={"target": "refmatch", "output_dir": a},
        input=hash_input(SAMPLE, into=a),
        judge=None,
    )
    finalize_run(a, run, host=HOST, packages={})
    m = read_manifest(a)
    assert m.judge is None and m.input.records.count == len(list(m.iter_records(a))) > 0
    assert any(o.path.startswith("case_report/") for o in m.iter_outputs(a))
    assert verify(a, input_path=SAMPLE).ok
    evaluate(SAMPLE, target="refmatch", output_dir=b, cache_dir=tmp_path / "cache2")
    rep = compare_runs(a, b)
    assert rep.reproduced, rep.lines()
    assert rep.cases_compared == len(list((a / "case_report").glob("*.json"))) > 0
    # a real case report edited afterwards is caught by both tools
    scored = [
        (p, d, k)
        for p in sorted((a / "case_report").glob("*.json"))
        for d in [json.loads(p.read_text())]
        for k, v in d.items()
        if isinstance(v, dict) and v.get("metrics")
    ]
    assert scored  # the comparison above saw real metric sections
    path, data, node = scored[0]
    data[node]["metrics"][0]["score"] = -1.0
    path.write_text(json.dumps(data))
    assert not verify(a).ok
    assert not compare_runs(a, b).reproduced
