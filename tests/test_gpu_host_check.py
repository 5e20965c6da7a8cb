"""scripts/gpu_host_check.sh without a GPU: its arguments, its step records and archive, and
how it stops a step that outlives the deadline (its whole process group, and a server that
left the group). The bench and CLI steps it runs are tested on their own
(test_bench_gpu_cpu.py, the CLI suites)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from tests.test_bundle import bundle_dir  # noqa: F401 - the fixture: a small split bundle

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu_host_check.sh"


def _check(*args: str, python: str = sys.executable, timeout: float = 120
           ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    env = dict(os.environ, PYTHON=python)
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                          env=env, timeout=timeout, check=False)  # fmt: skip


def _steps(results: Path) -> dict[str, list[str]]:
    rows = (results / "steps.tsv").read_text().splitlines()
    assert rows[0].split("\t") == ["step", "exit", "seconds", "limit_s"]
    return {r.split("\t")[0]: r.split("\t")[1:] for r in rows[1:]}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "--results DIR is required"),
        (["--results", "{tmp}/r", "--steps", "host,warp"], "unknown step 'warp'"),
        (["--results", "{tmp}/r", "--steps", "install"], "no install.sh there"),
        (["--results", "{tmp}/r", "--device", "tpu"], "--device tpu: cuda or cpu"),
        (["--results", "{tmp}/r", "--cases", "0"], "--cases 0: a positive whole number"),
        (["--results", "{tmp}/r", "--attack-probes", "x"], "--attack-probes x: a positive"),
        (["--results", "{tmp}/r", "--frobnicate"], "unknown argument --frobnicate"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(tmp_path: Path, args: list[str],
                                               message: str) -> None:  # fmt: skip
    proc = _check(*[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and message in proc.stderr
    assert not (tmp_path / "r").exists()


def test_help_names_every_step() -> None:
    proc = _check("--help")
    assert proc.returncode == 0
    for step in ("host", "install", "imports", "bench", "cli", "gpu-tests", "attacks"):
        assert f"\n  {step} " in proc.stdout


def test_cpu_rehearsal_records_each_step_and_archives_them(
    bundle_dir: Path, tmp_path: Path  # noqa: F811 - the imported fixture
) -> None:
    results, archive = tmp_path / "results", tmp_path / "results.tgz"
    proc = _check("--results", str(results), "--bundle", str(bundle_dir), "--device", "cpu",
                  "--steps", "host,install", "--archive", str(archive))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    steps = _steps(results)
    assert list(steps) == ["host", "install"] and all(s[0] == "0" for s in steps.values())
    freeze = (results / "target-freeze.txt").read_text().splitlines()
    assert freeze[0].startswith("# python: ") and freeze[1].startswith("# platform: manylinux_")
    assert any(line.startswith("pydantic==") for line in freeze)
    # the rehearsal verifies and joins but installs nothing
    install = (results / "install.log").read_text()
    assert "files verified (sha256), 2 joined from parts" in install and "would run:" in install
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    assert {"results/steps.tsv", "results/host.log", "results/install.log"} <= names


def test_a_step_past_the_deadline_is_stopped_with_what_it_started(tmp_path: Path) -> None:
    """The fake python starts a child in the step's group and a server-like process in its
    own session whose command line names the run's folder; both must be gone afterwards, the
    step recorded as `timeout` and the next one as `skipped`."""
    results = tmp_path / "results"
    fake = tmp_path / "python"
    fake.write_text(
        "#!/usr/bin/env bash\n"
        f"setsid bash -c 'sleep 300' '{results}/bench/server-marker' &\n"
        "sleep 301 &\n"
        "wait\n"
    )
    fake.chmod(0o755)
    started = time.monotonic()
    proc = _check("--results", str(results), "--steps", "bench,gpu-tests", "--deadline", "22",
                  python=str(fake))  # fmt: skip
    took = time.monotonic() - started
    assert proc.returncode == 1, proc.stderr
    steps = _steps(results)
    assert steps["bench"][0] == "timeout" and steps["bench"][2] == "7"
    assert steps["gpu-tests"][0] == "skipped"
    assert took < 40
    left = subprocess.run(["pgrep", "-f", f"{results}/bench/server-marker"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert left.stdout == ""
    assert subprocess.run(["pgrep", "-x", "-f", "sleep 301"], capture_output=True,
                          check=False).returncode == 1  # fmt: skip


def test_the_host_freeze_never_keeps_a_credential_from_a_url(tmp_path: Path) -> None:
    results = tmp_path / "results"
    fake = tmp_path / "python"
    fake.write_text(
        "#!/usr/bin/env bash\n"
        'if [ "$1" = -c ]; then echo "# python: 3.12.3"; echo "# platform: manylinux_2_39_x86_64";\n'
        "else echo 'tool @ git+https://deploy:s3cr3t-t0ken@git.example/tool.git@abc'; "
        "echo 'torch==2.11.0'; fi\n"
    )
    fake.chmod(0o755)
    proc = _check("--results", str(results), "--steps", "host", python=str(fake))
    assert proc.returncode == 0, proc.stderr
    freeze = (results / "target-freeze.txt").read_text()
    assert "tool @ git+https://git.example/tool.git@abc" in freeze and "torch==2.11.0" in freeze
    assert "s3cr3t" not in freeze and "deploy" not in freeze
