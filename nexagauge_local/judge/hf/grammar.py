"""The hf backend's two grammar engines as logits processors for `generate`, each through its
library's public API; neither allows free whitespace between JSON tokens (shorter answers, no
whitespace loops).

- `outlines` (the default): `outlines.backends.get_json_schema_logits_processor` over
  outlines-core, an index of every DFA state's allowed tokens built per schema (seconds; GBs
  for bounded strings, hence string_bounds = "clip"); batch-wide and resettable.
- `guidance` (llguidance): `GuidanceMask`, a schema costs milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import torch

from nexagauge_local.judge.hf.processors import Processor, RowProcessor

HF_GRAMMARS = ("guidance", "outlines")
GrammarKind = Literal["json", "regex"]


class GuidanceMask(RowProcessor):
    """llguidance's mask for each row of a micro-batch, one `LLMatcher` a row, computed lazily
    per step by a lexer + Earley parser; masks applied by `llguidance.torch`."""

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

    def compile(self, source: str, kind: GrammarKind = "json") -> Any:
        """`source`: a JSON schema (our rubric answers) or a regular expression (a guard
        format's short answer)."""
        key = f"{kind}:{source}"
        if key not in self.compiled:
            self.compiled[key] = (self._outlines(source, kind) if self.engine == "outlines"
                                  else self._guidance(source, kind))  # fmt: skip
        return self.compiled[key]

    def processor(self, source: str, rows: int, eos_ids: Iterable[int],
                  kind: GrammarKind = "json") -> Processor:  # fmt: skip
        """A fresh processor for a micro-batch of `rows` rows of this grammar."""
        compiled = self.compile(source, kind)
        if self.engine == "outlines":
            compiled.reset()
            return compiled  # type: ignore[no-any-return]
        return GuidanceMask(self._ll_tokenizer, compiled, rows, eos_ids)

    def _outlines(self, source: str, kind: GrammarKind) -> Any:
        import outlines
        from outlines.backends import get_json_schema_logits_processor, get_regex_logits_processor

        if self._outlines_model is None:
            self._outlines_model = outlines.from_transformers(self.model, self.tokenizer)
        if kind == "regex":
            return get_regex_logits_processor("outlines_core", self._outlines_model, source)
        return get_json_schema_logits_processor("outlines_core", self._outlines_model,
                                                source, whitespace_pattern="")  # fmt: skip

    def _guidance(self, source: str, kind: GrammarKind) -> str:
        """A schema llguidance cannot compile raises ValueError here, not mid-run."""
        import llguidance
        import llguidance.hf

        if self._ll_tokenizer is None:  # its EOS: the tokenizer's; sized to the logits
            self._ll_tokenizer = llguidance.hf.from_tokenizer(self.tokenizer, n_vocab=self.vocab)
        grammar: str = (llguidance.LLMatcher.grammar_from_regex(source) if kind == "regex"
                        else llguidance.LLMatcher.grammar_from_json_schema(
                            source, defaults={"whitespace_flexible": False}))  # fmt: skip
        problem = llguidance.LLMatcher.validate_grammar(grammar, self._ll_tokenizer)
        if problem and not problem.startswith("WARNING"):
            raise ValueError(f"llguidance cannot compile the schema: {problem}")
        return grammar
