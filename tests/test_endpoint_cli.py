"""`run` and `estimate` with a judge server (`--judge-url`, an endpoint profile) against the
scripted OpenAI server: case reports and summary.json name the endpoint judge, tokens come from
the server's usage, device-seconds are null unless its GPUs are stated; a server that cannot
judge stops the run in one line, exit 2, before any record is judged; a run killed mid-flight
resumes from every answer it committed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from nexagauge_local.cli import main
from nexagauge_local.judge.cache import DB_NAME
from tests.endpoint_stub import Reply, StubServer
from tests.kill_helpers import committed_count, kill_once_committed

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "nexagauge_local" / "data" / "sample.jsonl"


def redteam_records(tmp_path: Path, n: int) -> Path:
    records = [r for r in map(json.loads, SAMPLE.read_text().splitlines()) if "redteam" in r][:n]
    data = tmp_path / "redteam.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    return data


def run(tmp_path: Path, url: str, *extra: str, n: int = 3) -> Result:
    args = ["run", "redteam", "--input", str(redteam_records(tmp_path, n)), "--output-dir",
            str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "-q",
            "--judge-url", url, *extra]
    return CliRunner().invoke(main, args)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_run_judges_through_the_server(tmp_path: Path) -> None:
    with StubServer() as stub:
        result = run(tmp_path, stub.url, "--judge-api-key", "s3cret-key", "--judge-revision", "r1")
        calls = stub.chat_calls()
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    reports = sorted((out / "case_report").glob("*.json"))
    assert len(reports) == 3
    summary = json.loads((out / "summary.json").read_text())
    judge = summary["judge"]
    assert judge["backend"] == "endpoint"
    assert judge["fingerprint"] == ("endpoint:stub-judge@r1/json_schema"
                                    "[root=/weights/stub-judge,max_model_len=4096]")
    assert judge["endpoint"]["served_model"] == "stub-judge"
    assert judge["endpoint"]["server_gpus"] is None
    usage = summary["nodes"]["redteam"]
    judged = len(calls) - 1  # less the pre-flight probe
    assert usage["backend_requests"] == judged >= 3 and usage["errors"] == 0
    # tokens are the server's usage figures (the stub: prompt 10 + n for the n-th call)
    assert usage["input_tokens"] == sum(10 + n for n in range(1, judged + 1))
    assert usage["gpu_seconds"] is None and summary["cost"]["gpu_seconds"] is None
    for path in reports:  # each case's cost says unknown too, not a partial 0.0
        cost = json.loads(path.read_text())["redteam"]["cost"]
        assert cost["gpu_seconds"] is None and cost["input_tokens"] > 0
    for name in ("summary.json", "manifest.json"):
        assert "s3cret-key" not in (out / name).read_text()
    assert (out / "report.html").exists()


def test_stated_gpus_give_device_seconds(tmp_path: Path) -> None:
    with StubServer(script=lambda n, body: Reply(delay=0.05)) as stub:
        result = run(tmp_path, stub.url, "--judge-gpus", "2", "--gpu-hour-price", "3.6")
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["judge"]["endpoint"]["server_gpus"] == 2
    gpu = summary["cost"]["gpu_seconds"]
    assert gpu > 0 and summary["cost"]["cost"] == pytest.approx(gpu / 1000, abs=1e-6)  # rounded to 6 places
    cases = [json.loads(p.read_text())["redteam"]["cost"]
             for p in (tmp_path / "out" / "case_report").glob("*.json")]
    assert all(c["gpu_seconds"] > 0 and c["cost"] > 0 for c in cases)
    assert sum(c["gpu_seconds"] for c in cases) == pytest.approx(gpu, rel=1e-3)


def test_an_endpoint_profile_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with StubServer(models=("a", "judge-7b"), api_key="from-env") as stub:
        profile = tmp_path / "team-judge.toml"
        profile.write_text(f'backend = "endpoint"\nurl = "{stub.url}"\nserved_model = "judge-7b"\n'
                           'api_key_env = "TEAM_JUDGE_KEY"\nconcurrency = 2\n')
        monkeypatch.setenv("TEAM_JUDGE_KEY", "from-env")
        args = ["run", "redteam", "--input", str(redteam_records(tmp_path, 2)), "--output-dir",
                str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "-q",
                "--model", str(profile)]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        assert stub.max_in_flight <= 2
        assert {c.body["model"] for c in stub.chat_calls()} == {"judge-7b"}
    judge = json.loads((tmp_path / "out" / "summary.json").read_text())["judge"]
    assert judge["model"] == "team-judge" and judge["fingerprint"].startswith("endpoint:judge-7b@")


def one_line_exit_2(result: Result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    assert "Traceback" not in result.output
    for w in words:
        assert w in lines[0], lines[0]


def test_preflight_unreachable_server(tmp_path: Path) -> None:
    started = time.monotonic()
    one_line_exit_2(run(tmp_path, f"http://127.0.0.1:{free_port()}/v1"), "cannot reach")
    assert time.monotonic() - started < 30
    assert committed_count(tmp_path / "cache" / DB_NAME) == 0


def test_preflight_unknown_model_lists_the_served_ones(tmp_path: Path) -> None:
    with StubServer(models=("a", "b")) as stub:
        one_line_exit_2(run(tmp_path, stub.url, "--judge-model-name", "c"),
                        "does not serve 'c'", "a, b")
        assert stub.chat_calls() == []


def test_preflight_schema_rejected(tmp_path: Path) -> None:
    with StubServer(reject_schema=True) as stub:
        one_line_exit_2(run(tmp_path, stub.url), "rejected", "json_schema", "HTTP 400")
        assert len(stub.chat_calls()) == 0  # the probe's 400 comes before the chat handler


def test_preflight_schema_ignored_and_key_refused(tmp_path: Path) -> None:
    with StubServer(script=lambda n, body: Reply(content="Sure, it is fine.")) as stub:
        one_line_exit_2(run(tmp_path, stub.url), "ignores response_format")
        assert len(stub.chat_calls()) == 1  # the probe alone
    with StubServer(api_key="right") as stub:
        one_line_exit_2(run(tmp_path, stub.url, "--judge-api-key", "wrong"), "HTTP 401")


def test_estimate_counts_tokens_with_the_server(tmp_path: Path) -> None:
    with StubServer() as stub:
        args = ["estimate", "redteam", "--input", str(redteam_records(tmp_path, 2)),
                "--cache-dir", str(tmp_path / "cache"), "--judge-url", stub.url, "--json"]
        result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    est = json.loads(result.output)
    judge = est["nodes"]["redteam"]["judge"]
    assert judge["requests"] == 4 and judge["basis"] == "exact requests"
    assert judge["prompt_tokens"] > 0  # counted by the server's /tokenize (the stub: words)


# ------------------------------------------------------------------ kill -9 and resume


def test_sigkill_mid_run_then_resume_reuses_every_committed_answer(tmp_path: Path) -> None:
    data = redteam_records(tmp_path, 6)
    cache = tmp_path / "cache"
    # one request at a time, each slow: the kill lands with some answers committed
    with StubServer(script=lambda n, body: Reply(delay=0.4 if n else 0.0)) as stub:
        args = [sys.executable, "-m", "nexagauge_local", "run", "redteam", "--input", str(data),
                "--output-dir", str(tmp_path / "out"), "--cache-dir", str(cache), "-q",
                "--judge-url", stub.url, "--judge-concurrency", "1"]
        proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        kill_once_committed(proc, cache / DB_NAME, 2, timeout_s=180, poll_s=0.05)
        kept = committed_count(cache / DB_NAME)
        total_requests = 2 * 6  # two redteam requests per record
        assert 2 <= kept < total_requests
        before = len(stub.chat_calls())
        result = CliRunner().invoke(main, [a for a in args[3:]])
        assert result.exit_code == 0, result.output
        asked_again = len(stub.chat_calls()) - before - 1  # less the pre-flight probe
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    usage = summary["nodes"]["redteam"]
    assert usage["cache_hits"] == kept  # every committed answer reused
    assert asked_again == usage["backend_requests"] == usage["requests"] - kept
    assert committed_count(cache / DB_NAME) == usage["requests"]


def test_calibrate_measures_the_server(tmp_path: Path) -> None:
    """`calibrate --judge-url` times the server, not this host, and stores it for the server's
    fingerprint under a device key naming the stated GPUs (this host's CPU is not the judge's)."""
    cache = tmp_path / "cache"
    with StubServer(script=lambda n, body: Reply(delay=0.02)) as stub:
        result = CliRunner().invoke(main, ["calibrate", "--judge-url", stub.url, "--judge-gpus",
                                           "2", "--n", "3", "--cache-dir", str(cache)])
        judged = len(stub.chat_calls()) - 1  # less the pre-flight probe
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())  # rich wraps at the terminal's width
    assert "server GPU-seconds per red-team judgement (through the server, n=3)" in said
    assert judged == 2 + 2 * 3  # the warm-up pair, then both workloads
    (stored,) = (cache / "calibration").glob("*.json")
    calibration = json.loads(stored.read_text())
    assert calibration["fingerprint"] == ("endpoint:stub-judge@unrevised/json_schema"
                                          "[root=/weights/stub-judge,max_model_len=4096]")
    assert calibration["device"] == "server:2" and calibration["gpus"] == 2
    assert calibration["parsed"] == 6 and calibration["seconds_per_judgement"] > 0


def test_calibrate_with_an_unreachable_server_is_one_line_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["calibrate", "--judge-url",
                                       f"http://127.0.0.1:{free_port()}/v1",
                                       "--cache-dir", str(tmp_path)])
    one_line_exit_2(result, "cannot reach")
    assert not (tmp_path / "calibration").exists()
