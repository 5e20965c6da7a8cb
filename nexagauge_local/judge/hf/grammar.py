"""Grammar engines for the hf backend's decode loop: one compiled grammar per schema, one
matcher per row, both filling the same 32-bit token bitmask.

Why two engines:
- `outlines` (outlines-core) precompiles the schema into an index of every DFA state's allowed
  tokens. Bounded strings (the verdict schema's evidence spans are `maxLength` 160, eight of
  them) unroll into thousands of states, each holding a large share of the vocabulary: the
  redteam schema's index takes about 1.5 GB of memory and 10 s to build on the demo judge's
  49k vocabulary (measured on the demo judge), once per schema and per process.
- `guidance` (llguidance, the engine vLLM calls "guidance") computes each step's mask lazily
  from a lexer + Earley parser, so a schema costs milliseconds and kilobytes to compile.

Both know one EOS id, the tokenizer's. An extra EOS id of the model (weights.eos_set) that is
an ordinary token of the vocabulary stays allowed inside strings even when llguidance is told
it is an EOS (tested), so the decode loop aligns every extra id to the grammar's EOS bit for
both engines (hf/decode.py).

Both enforce the same schema with no free whitespace, but their token masks are not the same
(outlines' index rejects some tokens llguidance allows), so greedy answers differ: on the demo
judge, 64 of 64 in scripts/bench_grammar.py, guidance's about 4x longer (the small model fills
the violation lists that outlines' masks steer it to close). outlines therefore stays the hf
default (answers and caches unchanged); the engine is a profile setting and a
`--grammar-backend` option, and the judge fingerprint names it.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

HF_GRAMMARS = ("guidance", "outlines")


class RowMatcher(Protocol):
    """One row's grammar state."""

    def fill(self, bitmask: torch.Tensor, row: int) -> None: ...
    def advance(self, token: int) -> None: ...


class CompiledGrammar(Protocol):
    """A schema compiled for one tokenizer; `grammar_eos` is the EOS id it knows."""

    grammar_eos: int | None

    def matcher(self) -> RowMatcher: ...


def bitmask_words(vocab: int) -> int:
    return (vocab + 31) // 32


# ------------------------------------------------------------------ outlines


class _OutlinesRow:
    def __init__(self, index: Any) -> None:
        from outlines_core import Guide

        self.guide = Guide(index)

    def fill(self, bitmask: torch.Tensor, row: int) -> None:
        from outlines_core.kernels.torch import fill_next_token_bitmask

        fill_next_token_bitmask(self.guide, bitmask[row : row + 1])

    def advance(self, token: int) -> None:
        if not self.guide.is_finished():
            self.guide.advance(token_id=token, return_tokens=False)


class OutlinesGrammar:
    def __init__(self, index: Any, grammar_eos: int | None) -> None:
        self.index = index
        self.grammar_eos = grammar_eos

    def matcher(self) -> RowMatcher:
        return _OutlinesRow(self.index)


# ------------------------------------------------------------------ llguidance


class _GuidanceRow:
    def __init__(self, tokenizer: Any, grammar: str) -> None:
        import llguidance

        self.m = llguidance.LLMatcher(tokenizer, grammar)

    def fill(self, bitmask: torch.Tensor, row: int) -> None:
        from llguidance.torch import fill_next_token_bitmask

        fill_next_token_bitmask(self.m, bitmask, row)

    def advance(self, token: int) -> None:
        if not self.m.is_stopped():
            self.m.consume_token(token)


class GuidanceGrammar:
    def __init__(self, tokenizer: Any, grammar: str, grammar_eos: int | None) -> None:
        self.tokenizer = tokenizer
        self.grammar = grammar
        self.grammar_eos = grammar_eos

    def matcher(self) -> RowMatcher:
        return _GuidanceRow(self.tokenizer, self.grammar)


def guidance_tokenizer(hf_tokenizer: Any, vocab: int) -> Any:
    """llguidance's view of the tokenizer (its EOS: the tokenizer's), sized to the logits."""
    import llguidance.hf

    return llguidance.hf.from_tokenizer(hf_tokenizer, n_vocab=vocab)


def guidance_grammar(
    ll_tokenizer: Any, schema_json: str, grammar_eos: int | None
) -> GuidanceGrammar:
    """No free whitespace between JSON tokens, as the outlines path (shorter answers, no
    whitespace loops); a schema llguidance cannot compile raises ValueError here, not mid-run."""
    import llguidance

    grammar = llguidance.LLMatcher.grammar_from_json_schema(
        schema_json, defaults={"whitespace_flexible": False}
    )
    return _validated(ll_tokenizer, grammar, grammar_eos, "the schema")


def guidance_regex(ll_tokenizer: Any, regex: str, grammar_eos: int | None) -> GuidanceGrammar:
    """A guard format's short answer as an llguidance grammar."""
    import llguidance

    grammar = llguidance.LLMatcher.grammar_from_regex(regex)
    return _validated(ll_tokenizer, grammar, grammar_eos, "the answer pattern")


def _validated(ll_tokenizer: Any, grammar: str, grammar_eos: int | None,
               what: str) -> GuidanceGrammar:  # fmt: skip
    import llguidance

    problem = llguidance.LLMatcher.validate_grammar(grammar, ll_tokenizer)
    if problem and not problem.startswith("WARNING"):
        raise ValueError(f"llguidance cannot compile {what}: {problem}")
    return GuidanceGrammar(ll_tokenizer, grammar, grammar_eos)


def outlines_regex(outlines_model: Any, regex: str, grammar_eos: int | None) -> OutlinesGrammar:
    """A guard format's short answer as an outlines index (through outlines' Generator, as the
    schemas are)."""
    import outlines
    from outlines.types import Regex

    generator: Any = outlines.Generator(outlines_model, Regex(regex))
    return OutlinesGrammar(generator.logits_processor.index, grammar_eos)
