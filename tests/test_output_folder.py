"""A run is a transaction on its output folder (app/output_folder.py): after any fault the
folder holds the previous complete run or the new complete run, never a mix, and `verify`
says so. Every test runs the real CLI (refmatch: no judge, seconds per run) and checks the
exit code, the one line said, the folder's contents and verify's verdict.

The judge-cache side of a crash (kill -9 while judging, then a re-run into the same folder
that resumes from the cache) is tests/test_kill_resume.py, with the real demo judge.
"""

from __future__ import annotations

import json
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from nexagauge_local.cli import main
from tests.conftest import user_env

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "nexagauge_local" / "data" / "sample.jsonl"
TIMEOUT_S = 300
BIG = 6_000  # records: a run of a few seconds, long enough to be caught part-way


def cli(*args: object) -> tuple[int, str]:
    res = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return res.exit_code, res.output


def refmatch(out: Path, cache: Path, *extra: object, data: Path = SAMPLE) -> tuple[int, str]:
    return cli("run", "refmatch", "--input", data, "--output-dir", out, "--cache-dir", cache,
               "-q", *extra)


def verify(out: Path) -> tuple[int, str]:
    return cli("verify", out)


def listing(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` with its bytes (the folder's whole state)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def leftovers(out: Path) -> list[str]:
    """What a run leaves beside its folder: its staging folder, a journal, the lock file."""
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def error_lines(output: str) -> list[str]:
    return [ln for ln in output.splitlines() if ln.startswith(("Error:", "error:"))]


def big_input(tmp_path: Path, n: int) -> Path:
    """n refmatch records."""
    path = tmp_path / f"big-{n}.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"case_id": f"c{i}", "output": f"the cat {i} sat on the mat",
                                 "reference": f"a cat {i % 7} sat on a mat"}) + "\n")
    return path


def spawn(*args: object, extra_env: dict[str, str] | None = None,
          **kw: object) -> subprocess.Popen[str]:
    env = user_env() | (extra_env or {})
    return subprocess.Popen([sys.executable, "-m", "nexagauge_local", *map(str, args)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            **kw)  # type: ignore[call-overload]


def wait_for(cond: Callable[[], bool], proc: subprocess.Popen[str], what: str) -> None:
    started = time.monotonic()
    while not cond():
        assert proc.poll() is None, f"run ended before {what}: {proc.communicate()}"
        assert time.monotonic() - started < TIMEOUT_S, f"no {what} in time"
        time.sleep(0.01)


def staging_of(out: Path) -> list[Path]:
    return [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.staging-")]


# ------------------------------------------------------------------ an existing folder


def test_a_smaller_second_run_replaces_the_first_whole(tmp_path: Path) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    assert refmatch(out, cache)[0] == 0
    assert len(list((out / "case_report").iterdir())) == 32
    code, said = refmatch(out, cache, "--limit", "3")
    assert code == 0, said
    assert len(list((out / "case_report").iterdir())) == 3  # none of the first run's 32 left
    assert json.loads((out / "summary.json").read_text())["cases"]["valid"] == 3
    assert verify(out)[0] == 0
    assert leftovers(out) == []


def test_a_folder_holding_other_files_is_refused_unless_overwrite(tmp_path: Path) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    code, said = refmatch(out, cache)
    assert code == 2
    assert error_lines(said) == [(
        f"Error: --output-dir {out}: holds 'notes.txt', which no run wrote; choose an empty or "
        "new folder, or pass --overwrite to replace the folder and everything in it")]
    assert listing(out) == {"notes.txt": b"mine"} and leftovers(out) == []

    code, said = refmatch(out, cache, "--overwrite")
    assert code == 0, said
    assert not (out / "notes.txt").exists() and verify(out)[0] == 0


def test_an_input_inside_the_output_folder_is_refused_even_with_overwrite(tmp_path: Path) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    out.mkdir()
    data = out / "data.jsonl"
    shutil.copy(SAMPLE, data)
    code, said = refmatch(out, cache, "--overwrite", data=data)
    assert code == 2
    assert error_lines(said) == [(f"Error: --output-dir {out}: holds {data}, which this run reads "
                                  "and replacing the folder would delete; choose another folder")]
    assert data.read_bytes() == SAMPLE.read_bytes()


def test_verify_fails_on_every_file_the_manifest_does_not_name(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert refmatch(out, tmp_path / "cache", "--limit", "2")[0] == 0
    (out / "extra.txt").write_text("slipped in")
    (out / "case_report" / ".hidden.json").write_text("{}")
    code, said = verify(out)
    assert code == 1
    assert "DIFF case_report/.hidden.json: extra file, not in the manifest" in said
    assert "DIFF extra.txt: extra file, not in the manifest" in said
    assert "FAILED: 2 difference(s)" in said


# ------------------------------------------------------------------ faults part-way


def test_ctrl_c_in_the_report_stage_exits_130_and_keeps_the_previous_run(tmp_path: Path) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    assert refmatch(out, cache, "--limit", "3")[0] == 0
    before = listing(out)
    # summary.json is the runner's last file: from then on the run is rendering and auditing
    proc = spawn("run", "refmatch", "--input", big_input(tmp_path, BIG), "--output-dir", out,
                 "--cache-dir", cache, "-q")
    wait_for(lambda: any((s / "summary.json").exists() for s in staging_of(out)), proc,
             "summary.json in the staging folder")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("interrupted: every judgement made so far")
    assert listing(out) == before and leftovers(out) == []
    assert verify(out)[0] == 0


def test_kill_9_part_way_leaves_the_previous_run_and_the_next_run_cleans_up(
        tmp_path: Path) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    assert refmatch(out, cache, "--limit", "3")[0] == 0
    before = listing(out)
    data = big_input(tmp_path, BIG)
    proc = spawn("run", "refmatch", "--input", data, "--output-dir", out, "--cache-dir", cache,
                 "--shard-size", "500", "-q")
    wait_for(lambda: any(any((s / "case_report").glob("*.json")) for s in staging_of(out)), proc,
             "a case report in the staging folder")
    proc.kill()
    proc.wait(timeout=30)
    assert listing(out) == before and verify(out)[0] == 0
    assert staging_of(out)  # what the killed run wrote, beside the folder

    code, said = refmatch(out, cache, "--limit", "5", data=data)
    assert code == 0, said
    assert len(list((out / "case_report").iterdir())) == 5
    assert leftovers(out) == [] and verify(out)[0] == 0


def test_a_second_run_on_the_same_folder_refuses_naming_the_lock(tmp_path: Path) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    first = spawn("run", "refmatch", "--input", big_input(tmp_path, BIG), "--output-dir", out,
                  "--cache-dir", cache, "-q")
    wait_for(lambda: bool(staging_of(out)), first, "the first run's staging folder")
    code, said = refmatch(out, cache, "--limit", "2")
    assert code == 2
    lock = out.parent / ".out.lock"
    assert error_lines(said) == [(
        f"Error: --output-dir {out}: another run is writing into it (lock {lock} held by process "
        f"{first.pid}); wait for it, or choose another folder")]
    _, err = first.communicate(timeout=TIMEOUT_S)
    assert first.returncode == 0, err
    assert len(list((out / "case_report").iterdir())) == BIG  # the first run, untouched
    assert leftovers(out) == [] and verify(out)[0] == 0


def test_a_file_too_large_part_way_fails_one_line_keeping_the_previous_run(
        tmp_path: Path) -> None:
    """`ulimit -f` (or a quota) refuses report.html after the case reports were written."""
    import resource

    out, cache = tmp_path / "out", tmp_path / "cache"
    assert refmatch(out, cache, "--limit", "3")[0] == 0
    before = listing(out)
    limit = 48 * 1024  # case reports and summary fit; the full report.html (70 KB) does not

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = spawn("run", "refmatch", "--input", SAMPLE, "--output-dir", out, "--cache-dir", cache,
                 "-q", preexec_fn=small_files)
    _, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 2, err
    lines = error_lines(err)
    assert len(lines) == 1 and lines[0].startswith(f"Error: --output-dir {out}: writing the run "
                                                   "failed"), err
    assert " failed at report.html (File too large); the folder was left as it was" in lines[0]
    assert "Traceback" not in err
    assert listing(out) == before and leftovers(out) == []
    assert verify(out)[0] == 0


# ------------------------------------------------------------------ a full disk (tmpfs)


def _namespace_or_skip() -> None:
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) to mount a private tmpfs")
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k x /mnt"],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a private tmpfs here: {probe.stderr.strip()}")


def test_a_full_disk_fails_one_line_keeping_the_previous_run(tmp_path: Path) -> None:
    """The output folder on a 256 KiB tmpfs (a private mount namespace, gone with the test):
    a 3-case run fits, the 32-case run beside it does not."""
    _namespace_or_skip()
    disk, cache = tmp_path / "disk", tmp_path / "cache"
    disk.mkdir()
    out = disk / "out"
    run = [sys.executable, "-m", "nexagauge_local", "run", "refmatch", "--input", str(SAMPLE),
           "--output-dir", str(out), "--cache-dir", str(cache), "-q"]
    py = [sys.executable, "-c",
          ("import json,pathlib,sys; r=pathlib.Path(sys.argv[1]); print(json.dumps(sorted("
           "p.relative_to(r).as_posix() for p in r.rglob('*'))))"), str(disk)]
    verify_cmd = [sys.executable, "-m", "nexagauge_local", "verify", str(out)]
    script = "\n".join([
        f"mount -t tmpfs -o size=256k tmpfs {disk} || exit 99",
        f"{shlex.join(run)} --limit 3 >/dev/null 2>&1; echo rc1=$?",
        f"{shlex.join(py)}",
        f"{shlex.join(run)} 2>/tmp/nexagauge-full-disk-err-$$; echo rc2=$?",
        "grep -v '^$' /tmp/nexagauge-full-disk-err-$$; rm -f /tmp/nexagauge-full-disk-err-$$",
        f"{shlex.join(py)}",
        f"{shlex.join(verify_cmd)} >/dev/null 2>&1; echo rc3=$?",
    ])
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True,
                          cwd=ROOT, env=user_env(), timeout=TIMEOUT_S, check=False)
    lines = done.stdout.splitlines()
    assert lines[0] == "rc1=0", done.stdout + done.stderr
    before = json.loads(lines[1])
    assert "out/report.html" in before
    rc2 = lines.index(next(ln for ln in lines if ln.startswith("rc2=")))
    assert lines[rc2] == "rc2=2", done.stdout
    said = lines[rc2 + 1:-2]
    assert len(said) == 1 and said[0].startswith(f"Error: --output-dir {out}: writing the run "
                                                 "failed"), said
    assert "(No space left on device); the folder was left as it was" in said[0]
    assert json.loads(lines[-2]) == before  # the previous run, whole; no staging left behind
    assert lines[-1] == "rc3=0"


def test_a_mount_point_is_staged_inside_and_replaced_whole(tmp_path: Path) -> None:
    """A folder that cannot be swapped (here a tmpfs mounted on it, as a container volume
    is): the run stages inside it and moves its files in at the end."""
    _namespace_or_skip()
    out, cache = tmp_path / "out", tmp_path / "cache"
    out.mkdir()
    run = [sys.executable, "-m", "nexagauge_local", "run", "refmatch", "--input", str(SAMPLE),
           "--output-dir", str(out), "--cache-dir", str(cache), "-q"]
    count = [sys.executable, "-c", ("import os,sys; print(sorted(os.listdir(sys.argv[1])), "
                                    "len(os.listdir(sys.argv[1] + '/case_report')))"), str(out)]
    script = "\n".join([
        f"mount -t tmpfs -o size=4m tmpfs {out} || exit 99",
        f"{shlex.join(run)} >/dev/null 2>&1; echo rc1=$?",
        f"{shlex.join(run)} --limit 3 >/dev/null 2>&1; echo rc2=$?",
        shlex.join(count),
        f"{sys.executable} -m nexagauge_local verify {out} >/dev/null 2>&1; echo rc3=$?",
    ])
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True,
                          cwd=ROOT, env=user_env(), timeout=TIMEOUT_S, check=False)
    assert done.stdout.splitlines() == [
        "rc1=0", "rc2=0",
        ("['case_report', 'manifest.json', 'manifest.outputs.jsonl', 'manifest.records.jsonl', "
         "'metrics', 'report.html', 'summary.json'] 3"),
        "rc3=0"], done.stdout + done.stderr
