"""SIGTERM (Slurm's scancel, systemctl stop) and SIGHUP (the terminal closed) stop a run the way
Ctrl-C does (cli/signals.py): one line, exit 128 + the signal's number, the output folder as it
was, and every judgement committed before the signal kept, so the same command resumes.

Real CLI processes: the demo judge on CPU for SIGTERM (the judge cache is what must survive),
refmatch (no judge, seconds) for SIGHUP.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from nexagauge_local.cli import signals
from nexagauge_local.judge.cache import DB_NAME
from tests.kill_helpers import committed_count
from tests.test_kill_resume import SAMPLE
from tests.test_output_folder import (
    ROOT,
    TIMEOUT_S,
    big_input,
    leftovers,
    refmatch,
    spawn,
    staging_of,
    verify,
    wait_for,
)

RESUME = "every judgement made so far is in the judge cache; run the same command again to resume"


def _last_line(err: str) -> str:
    return err.strip().splitlines()[-1]


def _python(code: str) -> tuple[int, str]:
    """Exit code and stderr of `code` run by this Python in a fresh process."""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)
    return done.returncode, done.stderr


def test_sigterm_while_judging_exits_143_keeping_committed_judgements_and_a_rerun_resumes(
        tmp_path: Path, demo_cache: Path) -> None:
    records = [r for r in map(json.loads, SAMPLE.read_text().splitlines()) if "redteam" in r][:2]
    data = tmp_path / "redteam.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out"
    args = ["run", "redteam", "--input", data, "--cache-dir", demo_cache, "--output-dir", out,
            "-q"]
    proc = spawn(*args)
    try:
        wait_for(lambda: committed_count(demo_cache / DB_NAME) > 0, proc, "a committed judgement")
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert "Traceback" not in err, err
    assert _last_line(err) == f"stopped by SIGTERM: {RESUME}"
    committed = committed_count(demo_cache / DB_NAME)
    assert committed >= 1
    assert not out.exists() and not staging_of(out)  # no half run, and the staging cleaned up

    rerun = spawn(*args[:-1])  # without -q: the summary says what was reused
    _out, err = rerun.communicate(timeout=TIMEOUT_S)
    assert rerun.returncode == 0, err
    usage = json.loads((out / "summary.json").read_text())["nodes"]["redteam"]
    assert usage["cache_hits"] == committed  # nothing judged before the signal is judged again
    assert usage["cache_hits"] + usage["backend_requests"] == 4
    assert verify(out)[0] == 0


def test_sighup_exits_129_and_leaves_the_previous_run(tmp_path: Path) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    assert refmatch(out, cache, "--limit", "2")[0] == 0
    proc = spawn("run", "refmatch", "--input", big_input(tmp_path, 6000), "--output-dir", out,
                 "--cache-dir", cache, "-q")
    wait_for(lambda: any(any((s / "case_report").glob("*.json")) for s in staging_of(out)), proc,
             "a case report in the staging folder")
    proc.send_signal(signal.SIGHUP)
    _out, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 129, err
    assert "Traceback" not in err, err
    assert _last_line(err) == f"stopped by SIGHUP: {RESUME}"
    assert leftovers(out) == [] and verify(out)[0] == 0
    assert len(list((out / "case_report").iterdir())) == 2  # the previous run, whole


def test_a_command_without_a_cache_says_which_signal_stopped_it(tmp_path: Path) -> None:
    """A command with no resumable work (here `nodes`, stopped as it starts) still exits
    128 + the signal, with one line, not click's "Aborted!" and 1."""
    code = ("import os, signal, sys\n"
            "from nexagauge_local.cli import main\n"
            "from nexagauge_local.cli import run_cmds\n"
            "assert hasattr(run_cmds, 'fitted_table')  # what `nodes` draws its table with\n"
            "run_cmds.fitted_table = lambda *a, **k: os.kill(os.getpid(), signal.SIGTERM)\n"
            "main(['nodes'])\n")
    assert _python(code) == (143, "stopped by SIGTERM\n")


def test_a_signal_the_caller_ignores_stays_ignored() -> None:
    """nohup ignores SIGHUP so that a run outlives its terminal: the CLI must not undo that."""
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    # SIGTERM at its default, as in a fresh CLI process (earlier tests in this session may
    # have left another handler: Ray's driver installs one)
    term_before = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        restore = signals.install()
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)
        restore()
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, before)
        signal.signal(signal.SIGTERM, term_before)


def test_connecting_to_ray_keeps_the_callers_sigterm_handler(monkeypatch) -> None:
    """ray.init puts its own SIGTERM handler (sys.exit(15)) in the driver; the CLI's clean stop
    must survive it, or a --cluster run stopped by a scheduler exits 15 without its line."""
    from nexagauge_local.cluster import executor
    from nexagauge_local.cluster.spec import parse_cluster

    class FakeRay:
        def is_initialized(self) -> bool:
            return False

        def init(self, **_: object) -> None:
            signal.signal(signal.SIGTERM, lambda *_: None)  # as ray.init does

    monkeypatch.setattr(executor, "import_ray", FakeRay)
    term_before = signal.signal(signal.SIGTERM, signal.SIG_DFL)  # as in a fresh CLI process
    restore = signals.install()
    try:
        ours = signal.getsignal(signal.SIGTERM)
        assert ours not in (signal.SIG_DFL, signal.SIG_IGN)
        executor.connect(parse_cluster("local"))
        assert signal.getsignal(signal.SIGTERM) is ours
    finally:
        restore()
        signal.signal(signal.SIGTERM, term_before)


def test_a_stop_that_lands_in_a_pydantic_serializer_still_ends_as_a_stop(tmp_path: Path) -> None:
    """pydantic-core wraps what a model's serializer raises in a PydanticSerializationError,
    the signal handler's Stopped included; the command still ends as a stop (one line,
    128 + the signal), not as a traceback and exit 1. A report entry's serializer is where a
    SIGHUP once landed."""
    code = ("import os, signal\n"
            "from nexagauge_local.cli import main, run_cmds\n"
            "from nexagauge_local.results.entries import ResultEntry\n"
            "class Hit(ResultEntry):\n"
            "    @property\n"
            "    def model_fields_set(self):\n"
            "        os.kill(os.getpid(), signal.SIGTERM)\n"
            "        return set()\n"
            "run_cmds.fitted_table = lambda *a, **k: Hit(x=1).model_dump()\n"
            "main(['nodes'])\n")
    assert _python(code) == (143, "stopped by SIGTERM\n")
