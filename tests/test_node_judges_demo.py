"""A judge per node with real engines: the demo judge (hf) under two profile names.

`run geval --model geval_steps=demo-b.toml --model demo` over two records: the steps are asked
of demo-b, the scores of demo. The cache, summary.json, manifest.json and report.html must say
so, and `reproduce` must re-run with the same two judges. demo-b is the demo profile renamed:
the same weights under another fingerprint, so every place a judge is named can tell them apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nexagauge_local.app.judge import backend_factory
from nexagauge_local.cli import main
from nexagauge_local.judge import JudgeCache
from nexagauge_local.settings import RunSettings
from tests.test_node_judges import ROWS, second_demo_profile, write_jsonl

pytestmark = pytest.mark.slow  # two demo-judge runs on hf (the first run, then reproduce)


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_each_node_is_judged_by_its_own_demo_profile_end_to_end(tmp_path: Path) -> None:
    other = second_demo_profile(tmp_path)
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["run", "geval", "--input", str(data), "--output-dir", str(out), "-q",
            "--cache-dir", str(cache), "--backend", "hf", "--model", f"geval_steps={other}",
            "--model", "demo"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output

    settings = RunSettings(cache_dir=cache, backend="hf")
    fp_a = backend_factory(settings).decision.fingerprint
    fp_b = backend_factory(settings.model_copy(update={"model": str(other)})).decision.fingerprint
    assert fp_a.startswith("demo@") and fp_b.startswith("demo-b@")

    summary = read(out / "summary.json")
    assert summary["judge"]["fingerprint"] == fp_a  # the default judge, as before
    judges = summary["node_judges"]
    assert {n: j["fingerprint"] for n, j in judges.items()} == {"geval_steps": fp_b,
                                                                "geval": fp_a}
    assert judges["geval_steps"]["profile"] == str(other) and judges["geval"]["profile"] == "demo"

    # the cache keys carry each judge's fingerprint: the steps' answers are demo-b's, the
    # scores demo's (the judge's output history is kept per fingerprint and schema)
    manifest = read(out / "manifest.json")
    schema_of = {s["node"]: s["schema_id"].rpartition("/")[2] for s in manifest["schemas"]}
    history = JudgeCache(cache)
    assert set(history.output_history(fp_b)) == {schema_of["geval_steps"]}
    assert set(history.output_history(fp_a)) == {schema_of["geval"]}

    assert manifest["judge"]["profile"] == "demo"
    assert set(manifest["node_judges"]) == {"geval_steps"}
    assert manifest["node_judges"]["geval_steps"]["profile"] == "demo-b"
    assert manifest["node_judges"]["geval_steps"]["fingerprint"] == fp_b
    assert manifest["settings"]["node_models"] == {"geval_steps": str(other)}
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "judge of geval_steps" in html and "demo-b" in html

    again = tmp_path / "again"
    result = CliRunner().invoke(main, ["reproduce", str(out), "--output-dir", str(again)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rerun = read(again / "summary.json")
    assert {n: j["fingerprint"] for n, j in rerun["node_judges"].items()} == {
        "geval_steps": fp_b, "geval": fp_a}
