"""What string maxLength costs the grammar engines: the schema as the contract states it against
the schema the engines now compile (`schemas.grammar_json`: no string maxLength).

Why: on the H100 (2026-11-24) vLLM spent 0.36 s per engine step at 400 requests, 41x the
compute floor, and on CPU the outlines index of one verdict schema held 1.8 GB. Both come from
the counted repetition a maxLength of 160 unrolls into. This prints, side by side in one run:

  outlines   index build seconds and RSS growth per schema, each variant in a fresh process
  xgrammar   compile seconds and microseconds per token-mask fill while a random "model"
             (uniform over the allowed tokens, like vLLM's dummy weights) writes answers;
             skipped with a note when xgrammar is not installed (it comes with vLLM)
  llguidance the same walk with the `guidance` engine's masks (derived lazily, no unrolling)

on the demo judge's tokenizer (SmolLM2, 49,152 tokens; `--model` names another) and the redteam
verdict schema.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, Protocol

import click

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VARIANTS = ("contract", "grammar")  # the schema with maxLength, and grammar_json's


def _schema_json(variant: str) -> str:
    from nexagauge_local.judge import schemas as S
    from nexagauge_local.nodes.redteam import verdict_schema

    schema = verdict_schema("scale_1_5", True)
    return S.schema_json(schema) if variant == "contract" else S.grammar_json(schema)


def _model_dir(model: str) -> Path:
    """The folder the engines load for MODEL (a profile name or weights path; `demo` by default:
    a small one, such as the tests' tiny judge, makes the same run take seconds)."""
    from nexagauge_local.judge.profiles import resolve_profile
    from nexagauge_local.judge.runtime import engine_model_path
    from nexagauge_local.settings import default_cache_dir

    return Path(engine_model_path(resolve_profile(model), default_cache_dir()))


def _rss_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096 / 1e6


def outlines_child(variant: str, model: str) -> dict[str, Any]:
    """In a fresh process: build the outlines generator the hf backend builds, report cost."""
    import outlines
    from outlines.types import JsonSchema
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = _model_dir(model)
    om = outlines.from_transformers(
        AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    )
    before, t = _rss_mb(), time.perf_counter()
    generator = outlines.Generator(om, JsonSchema(_schema_json(variant), whitespace_pattern=""))
    built = {"build_s": time.perf_counter() - t, "rss_mb": _rss_mb() - before}
    del generator  # held until measured: its index is the memory in question
    return built


class _Matcher(Protocol):
    """One answer's grammar state, as the random walk drives it."""

    def fill(self, bitmask: Any) -> None: ...
    def accept(self, token: int) -> bool: ...  # False: rejected, or the answer is over


def _random_walk(new_matcher: Callable[[], _Matcher], bitmask: Any, vocab_size: int,
                 stop: Collection[int], answers: int, compile_s: float) -> dict[str, Any]:
    """Mask-fill cost per token while a random "model" (uniform over the allowed tokens, like
    vLLM's dummy weights) writes `answers` answers of at most 400 tokens: the same walk for
    every grammar engine, so their figures compare."""
    import torch

    rng, shifts = random.Random(0), torch.arange(32, dtype=torch.int32)
    fill_s, fills, tokens = 0.0, 0, 0
    for _ in range(answers):
        matcher = new_matcher()
        for _ in range(400):
            t = time.perf_counter()
            matcher.fill(bitmask)
            fill_s, fills = fill_s + time.perf_counter() - t, fills + 1
            bits = ((bitmask[0].unsqueeze(1) >> shifts) & 1).flatten()[:vocab_size]
            pick = rng.choice(torch.nonzero(bits).flatten().tolist())
            if pick in stop or not matcher.accept(pick):
                break
            tokens += 1
    return {"compile_s": compile_s, "fill_us": fill_s / fills * 1e6,
            "mean_answer_tokens": tokens / answers}  # fmt: skip


def xgrammar_costs(variant: str, answers: int, model: str) -> dict[str, Any] | None:
    try:
        import xgrammar as xgr
    except ImportError:
        return None
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(_model_dir(model))
    info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=len(tok))
    t = time.perf_counter()
    compiled = xgr.GrammarCompiler(info).compile_json_schema(_schema_json(variant),
                                                            any_whitespace=False)  # fmt: skip
    compile_s = time.perf_counter() - t

    class Matcher:
        def __init__(self) -> None:
            self.m = xgr.GrammarMatcher(compiled)

        def fill(self, bitmask: Any) -> None:
            self.m.fill_next_token_bitmask(bitmask)

        def accept(self, token: int) -> bool:
            return bool(self.m.accept_token(token))

    return _random_walk(Matcher, xgr.allocate_token_bitmask(1, info.vocab_size),
                        info.vocab_size, set(info.stop_token_ids), answers, compile_s)


def guidance_costs(variant: str, answers: int, model: str) -> dict[str, Any]:
    """llguidance (the `guidance` grammar engine, a dependency of this package) on the same
    random walk: it derives masks lazily, so a bounded string need not unroll."""
    import llguidance
    import llguidance.hf
    import llguidance.torch
    from transformers import AutoTokenizer

    tok = llguidance.hf.from_tokenizer(AutoTokenizer.from_pretrained(_model_dir(model)))
    t = time.perf_counter()
    grammar = llguidance.LLMatcher.grammar_from_json_schema(
        _schema_json(variant), defaults={"whitespace_flexible": False})
    llguidance.LLMatcher(tok, grammar)
    compile_s = time.perf_counter() - t

    class Matcher:
        def __init__(self) -> None:
            self.m = llguidance.LLMatcher(tok, grammar)

        def fill(self, bitmask: Any) -> None:
            llguidance.torch.fill_next_token_bitmask(self.m, bitmask, 0)

        def accept(self, token: int) -> bool:
            return bool(self.m.consume_token(token)) and not self.m.is_stopped()

    return _random_walk(Matcher, llguidance.torch.allocate_token_bitmask(1, tok.vocab_size),
                        tok.vocab_size, {tok.eos_token}, answers, compile_s)


@click.command()
@click.option("--answers", type=click.IntRange(1), default=20, show_default=True,
              help="Random answers per variant for the mask timings.")
@click.option("--model", default="demo", show_default=True,
              help="Judge profile or weights path whose tokenizer (and model) the engines use.")
@click.option("--child", type=click.Choice(VARIANTS), default=None, hidden=True)
def main(answers: int, model: str, child: str | None) -> None:
    """Grammar cost of string maxLength: outlines (memory, build), xgrammar and llguidance
    (mask fills)."""
    if child:
        click.echo(json.dumps(outlines_child(child, model)))
        return
    click.echo(f"bench_grammar_bounds: redteam verdict schema (scale, reasoning), {model} "
               "tokenizer; 'contract' = with string maxLength, 'grammar' = grammar_json (without)")  # fmt: skip
    rows: dict[str, dict[str, Any]] = {}
    for variant in VARIANTS:
        out = subprocess.run([sys.executable, __file__, "--child", variant, "--model", model],
                             check=True, capture_output=True, text=True).stdout  # fmt: skip
        rows[variant] = {"outlines": json.loads(out.strip().splitlines()[-1]),
                         "xgrammar": xgrammar_costs(variant, answers, model),
                         "guidance": guidance_costs(variant, answers, model)}  # fmt: skip
    for variant, r in rows.items():
        o, x = r["outlines"], r["xgrammar"]
        line = f"  {variant:8}  outlines build {o['build_s']:6.2f} s  index +{o['rss_mb']:6.0f} MB"
        if x:
            line += (f"   xgrammar compile {x['compile_s']:.2f} s  mask {x['fill_us']:7.0f} us/token"
                     f"  (random answers {x['mean_answer_tokens']:.0f} tok)")  # fmt: skip
        gd = r["guidance"]
        line += (f"\n  {'':8}  llguidance compile {gd['compile_s']:.2f} s  mask "
                 f"{gd['fill_us']:7.0f} us/token  (random answers {gd['mean_answer_tokens']:.0f} tok)")
        click.echo(line)
    c, g = rows["contract"], rows["grammar"]
    ratios = (f"ratio contract/grammar: outlines memory "
              f"{c['outlines']['rss_mb'] / max(g['outlines']['rss_mb'], 1):.0f}x, "
              f"build {c['outlines']['build_s'] / g['outlines']['build_s']:.0f}x")  # fmt: skip
    if c["xgrammar"] and g["xgrammar"]:
        ratios += f", xgrammar mask {c['xgrammar']['fill_us'] / g['xgrammar']['fill_us']:.1f}x"
    else:
        ratios += "; xgrammar not installed here (it comes with vLLM): mask timing skipped"
    ratios += f", llguidance mask {c['guidance']['fill_us'] / g['guidance']['fill_us']:.1f}x"
    if c["xgrammar"]:
        ratios += (f"; with the bounds, xgrammar/llguidance mask "
                   f"{c['xgrammar']['fill_us'] / c['guidance']['fill_us']:.1f}x")
    click.echo(ratios)


if __name__ == "__main__":
    main()
