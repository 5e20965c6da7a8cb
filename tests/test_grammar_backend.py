"""The grammar engine is a profile setting and a `--grammar-backend` option."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from nexagauge_local.cli import main
from nexagauge_local.judge.factory import GrammarUnsupported, choose_grammar, make_backend_factory
from nexagauge_local.judge.profiles import JudgeProfile

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "nexagauge_local" / "data" / "sample.jsonl"


def test_choose_grammar_defaults_and_overrides() -> None:
    prof = JudgeProfile(name="p", weights="/w")
    assert choose_grammar("auto", prof, "vllm") == "xgrammar"
    assert choose_grammar("auto", prof, "hf") == "outlines"
    assert choose_grammar("outlines", prof, "vllm") == "outlines"
    pinned = prof.model_copy(update={"grammar_backend": "outlines"})
    assert choose_grammar("auto", pinned, "vllm") == "outlines"  # the profile's setting
    assert choose_grammar("xgrammar", pinned, "vllm") == "xgrammar"  # the flag wins
    with pytest.raises(GrammarUnsupported, match="hf backend decodes with outlines only"):
        choose_grammar("xgrammar", prof, "hf")


def test_non_default_grammar_is_part_of_the_fingerprint(tiny_judge_dir: Path, tmp_path: Path) -> None:
    default = make_backend_factory(str(tiny_judge_dir), backend="hf", cache_dir=tmp_path)
    explicit = make_backend_factory(str(tiny_judge_dir), backend="hf", cache_dir=tmp_path,
                                    grammar_backend="outlines")
    assert default.grammar_backend == explicit.grammar_backend == "outlines"
    assert default.fingerprint == explicit.fingerprint  # the default adds nothing
    assert "/grammar=" not in default.fingerprint


def test_xgrammar_on_the_hf_backend_is_a_set_up_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["run", "redteam", "--input", str(SAMPLE), "--limit", "1",
                                    "--output-dir", str(tmp_path / "out"), "--backend", "hf",
                                    "--grammar-backend", "xgrammar",
                                    "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 2, res.output
    assert "hf backend decodes with outlines only" in res.output
    assert not (tmp_path / "out" / "summary.json").exists()
