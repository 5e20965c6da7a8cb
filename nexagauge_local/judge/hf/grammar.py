"""The hf backend's two grammar engines, each through its library's public API, as logits
processors for `generate`: one compiled grammar per schema for the process, one processor per
micro-batch (all its rows have one schema).

- `outlines` (the default): `outlines.backends.get_json_schema_logits_processor` over
  outlines-core, an index of every DFA state's allowed tokens built per schema (seconds; GBs
  for bounded strings, hence string_bounds = "clip"); batch-wide and resettable.
- `guidance` (llguidance): masks computed lazily per step by a lexer + Earley parser, so a
  schema costs milliseconds; one `LLMatcher` per row, masks by `llguidance.torch`.

Both allow no free whitespace between JSON tokens (shorter answers, no whitespace loops) and
know one EOS id, the tokenizer's (hf/processors.py aligns the model's other EOS ids to it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from nexagauge_local.judge.hf.processors import Processor, RowProcessor

HF_GRAMMARS = ("guidance", "outlines")


class GuidanceMask(RowProcessor):
    """llguidance's mask for each row of a micro-batch, one matcher a row."""

    def __init__(self, ll_tokenizer: Any, grammar: str, rows: int, eos_ids: Iterable[int]) -> None:
        import llguidance
        from llguidance.torch import allocate_token_bitmask

        super().__init__(rows, eos_ids)
        self.matchers = [llguidance.LLMatcher(ll_tokenizer, grammar) for _ in range(rows)]
        self.bitmask = allocate_token_bitmask(rows, ll_tokenizer.vocab_size)

    def consume(self, row: int, token: int) -> None:
        if not self.matchers[row].consume_token(token):
            raise RuntimeError(f"llguidance rejected token {token}: "
                               f"{self.matchers[row].get_error()}")  # fmt: skip

    def process(self, scores: torch.FloatTensor) -> torch.FloatTensor:
        from llguidance.torch import apply_token_bitmask_inplace, fill_next_token_bitmask

        for row, matcher in enumerate(self.matchers):
            if self.done[row]:  # an ended row's token is padding: leave it unmasked
                self.bitmask[row].fill_(-1)
            else:
                fill_next_token_bitmask(matcher, self.bitmask, row)
        apply_token_bitmask_inplace(scores, self.bitmask.to(scores.device))
        return scores


class Grammars:
    """Compiled schemas of one engine over one tokenizer, each compiled on first use."""

    def __init__(self, engine: str, model: Any, tokenizer: Any, vocab: int) -> None:
        if engine not in HF_GRAMMARS:
            raise ValueError(f"the hf backend decodes with guidance or outlines, not {engine}")
        self.engine = engine
        self.model, self.tokenizer, self.vocab = model, tokenizer, vocab
        self.compiled: dict[str, Any] = {}  # schema JSON -> outlines processor / llguidance grammar
        self._outlines_model: Any = None
        self._ll_tokenizer: Any = None

    def compile(self, schema_json: str) -> Any:
        if schema_json not in self.compiled:
            self.compiled[schema_json] = (self._outlines(schema_json) if self.engine == "outlines"
                                          else self._guidance(schema_json))  # fmt: skip
        return self.compiled[schema_json]

    def processor(self, schema_json: str, rows: int, eos_ids: Iterable[int]) -> Processor:
        """A fresh processor for a micro-batch of `rows` rows of this schema."""
        compiled = self.compile(schema_json)
        if self.engine == "outlines":
            compiled.reset()
            return compiled  # type: ignore[no-any-return]
        return GuidanceMask(self._ll_tokenizer, compiled, rows, eos_ids)

    def _outlines(self, schema_json: str) -> Any:
        import outlines
        from outlines.backends import get_json_schema_logits_processor

        if self._outlines_model is None:
            self._outlines_model = outlines.from_transformers(self.model, self.tokenizer)
        return get_json_schema_logits_processor("outlines_core", self._outlines_model,
                                                schema_json, whitespace_pattern="")  # fmt: skip

    def _guidance(self, schema_json: str) -> str:
        """A schema llguidance cannot compile raises ValueError here, not mid-run."""
        import llguidance
        import llguidance.hf

        if self._ll_tokenizer is None:  # its EOS: the tokenizer's; sized to the logits
            self._ll_tokenizer = llguidance.hf.from_tokenizer(self.tokenizer, n_vocab=self.vocab)
        grammar: str = llguidance.LLMatcher.grammar_from_json_schema(
            schema_json, defaults={"whitespace_flexible": False})  # fmt: skip
        problem = llguidance.LLMatcher.validate_grammar(grammar, self._ll_tokenizer)
        if problem and not problem.startswith("WARNING"):
            raise ValueError(f"llguidance cannot compile the schema: {problem}")
        return grammar
