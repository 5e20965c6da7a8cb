"""kill -9 in the middle of an attacker-driven campaign, then the same command again: the
rounds that finished before the kill are not played again.

A real `attack` subprocess, SIGKILLed as soon as its first round's checkpoint is on disk; the
scripted OpenAI server (tests/endpoint_stub.py) plays target, attacker and judge (the latter
two through an endpoint judge profile), slowly enough that the kill lands mid-round. Target
answers are never cached, so the target requests the rerun makes count the rounds it played.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from nexagauge_local.cli import main
from nexagauge_local.redteam.campaign.model_driven import checkpoint_path
from tests.conftest import user_env
from tests.endpoint_stub import Reply, StubServer

TURNS = 3


def script(n: int, body: dict[str, Any]) -> Reply:
    if "response_format" not in body:  # the target: a refusal, so every turn is played
        return Reply(content="I can't help with that.", delay=0.3)
    return Reply(delay=0.3)  # attacker and judge: a valid answer for their schema


def target_calls(stub: StubServer) -> int:
    return sum("response_format" not in c.body for c in stub.chat_calls())


def test_a_killed_campaign_does_not_replay_finished_rounds(tmp_path: Path) -> None:
    probes = tmp_path / "probes.jsonl"
    res = CliRunner().invoke(main, ["probes", "export", "-o", str(probes), "--category",
                                    "violent_weapons"])
    assert res.exit_code == 0, res.output
    probes.write_text("".join(probes.read_text().splitlines(keepends=True)[:2]))
    out = tmp_path / "attacks.jsonl"
    with StubServer(script=script) as stub:
        judge = tmp_path / "judge.toml"
        judge.write_text(f'backend = "endpoint"\nurl = "{stub.url}"\n')
        args = [sys.executable, "-m", "nexagauge_local", "attack", "--target-url", stub.url,
                "--input", str(probes), "--output", str(out), "--strategies",
                "multi-turn-escalation", "--turns", str(TURNS), "--backtracks", "0",
                "--judge", str(judge), "--cache-dir", str(tmp_path / "cache"), "-q"]
        proc = subprocess.Popen(args, env=user_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        started = time.monotonic()
        while not checkpoint_path(out).exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() - started < 120, "no round finished in time"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        saved = json.loads(checkpoint_path(out).read_text())
        done = min(c["rounds"] for c in saved)
        assert 1 <= done < TURNS and len(saved) == 2
        before = target_calls(stub)

        again = subprocess.run(args, env=user_env(), capture_output=True, text=True,
                               timeout=300, check=False)
        assert again.returncode == 0, again.stderr
        assert "2 resumed from their last round" in " ".join(again.stderr.split())
        # only the rounds the checkpoint did not hold were played again
        assert target_calls(stub) - before == 2 * (TURNS - done)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and not checkpoint_path(out).exists()
    assert all(r["attack"]["rounds"] == TURNS for r in rows)
