"""Shared pytest fixtures."""

from __future__ import annotations

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
    from nexagauge_local.judge.hf_backend import HFBackend

    # one thread: the model is too small to gain from more, and a busy CI host makes
    # OpenMP threads wait on each other
    return HFBackend(
        tiny_profile, cache_dir=tmp_path_factory.mktemp("hf_cache"), device="cpu", threads=1
    )
