"""The grammar engine is a profile setting and a `--grammar-backend` option."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest
from click.testing import CliRunner

from nexagauge_local.cli import main
from nexagauge_local.judge.factory import GrammarUnsupported, choose_grammar, make_backend_factory
from nexagauge_local.judge.profiles import JudgeProfile, fingerprint

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "nexagauge_local" / "data" / "sample.jsonl"


def test_choose_grammar_defaults_and_overrides() -> None:
    prof = JudgeProfile(name="p", weights="/w")
    assert choose_grammar("auto", prof, "vllm") == "xgrammar"
    assert choose_grammar("auto", prof, "hf") == "outlines"
    assert choose_grammar("guidance", prof, "hf") == "guidance"
    assert choose_grammar("guidance", prof, "vllm") == "guidance"
    assert choose_grammar("outlines", prof, "vllm") == "outlines"
    pinned = prof.model_copy(update={"grammar_backend": "outlines"})
    assert choose_grammar("auto", pinned, "vllm") == "outlines"  # the profile's setting
    assert choose_grammar("xgrammar", pinned, "vllm") == "xgrammar"  # the flag wins
    with pytest.raises(GrammarUnsupported, match="hf backend decodes with guidance or outlines"):
        choose_grammar("xgrammar", prof, "hf")


def test_the_grammar_engine_is_part_of_the_fingerprint(tiny_judge_dir: Path, tmp_path: Path) -> None:
    """Another engine may decode another answer, so the judge cache keeps them apart; the
    default hf fingerprint (outlines) is the one it had before the engine became a setting."""
    hf = {"backend": "hf", "cache_dir": tmp_path}
    default = make_backend_factory(str(tiny_judge_dir), **hf)
    guidance = make_backend_factory(str(tiny_judge_dir), grammar_backend="guidance", **hf)
    outlines = make_backend_factory(str(tiny_judge_dir), grammar_backend="outlines", **hf)
    assert default.decision.grammar == outlines.decision.grammar == "outlines"
    assert default.decision.fingerprint == outlines.decision.fingerprint
    assert outlines.decision.fingerprint.endswith(f"/outlines=={version('outlines')}")
    assert guidance.decision.fingerprint.endswith(f"/llguidance=={version('llguidance')}")
    vllm = JudgeProfile(name="v", weights=str(tiny_judge_dir))
    assert "/grammar=" not in fingerprint(vllm, "vllm", "bfloat16", "xgrammar")
    assert fingerprint(vllm, "vllm", "bfloat16", "guidance").endswith(
        "/grammar=guidance/strings=caps")


@pytest.mark.parametrize("engine", ["guidance", "outlines"])
def test_both_hf_engines_decode_schema_valid_answers(tiny_backend, engine: str) -> None:
    """The random tiny judge puts JSON syntax inside strings wherever a grammar lets it, so
    this is a hard test of each engine's masks: every answer parses or ran out of tokens."""
    from nexagauge_local.judge.types import JudgeRequest
    from nexagauge_local.nodes.redteam import verdict_schema
    from tests.judge_fixtures import redteam_messages

    schema = verdict_schema()
    reqs = [JudgeRequest(redteam_messages(i), schema, 120, node="redteam") for i in range(4)]
    before = tiny_backend.grammar
    try:
        tiny_backend.grammar = engine
        results = tiny_backend.generate(reqs)
    finally:
        tiny_backend.grammar = before
    assert all(r.error in (None, "truncated") for r in results), [r.error for r in results]
    parsed = [r for r in results if r.error is None]
    assert parsed and all(schema.model_validate_json(r.raw_text) for r in parsed)


def test_xgrammar_on_the_hf_backend_is_a_set_up_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["run", "redteam", "--input", str(SAMPLE), "--limit", "1",
                                    "--output-dir", str(tmp_path / "out"), "--backend", "hf",
                                    "--grammar-backend", "xgrammar",
                                    "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 2, res.output
    assert "hf backend decodes with guidance or outlines" in res.output
    assert not (tmp_path / "out" / "summary.json").exists()
