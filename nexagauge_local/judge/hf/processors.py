"""Logits processors the hf backend hands to `generate` beside the grammar engine's."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

import torch
from transformers import LogitsProcessor

from nexagauge_local.judge.string_caps import StringCaps, close_strings_

Processor = Callable[[torch.LongTensor, torch.FloatTensor], torch.FloatTensor]
TopSteps = tuple[list[list[float]], list[list[int]]]  # one step's top values and ids, per row


class RowProcessor(LogitsProcessor):
    """Feeds each row's newest token to `consume` once, until the row emits an EOS id:
    `generate` passes the whole sequence so far and keeps calling for rows that ended (their
    new tokens are padding)."""

    def __init__(self, rows: int, eos_ids: Iterable[int]) -> None:
        self.eos_ids = frozenset(eos_ids)
        self.done = [False] * rows
        self.started = False

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if self.started:
            for row, token in enumerate(input_ids[:, -1].tolist()):
                if not self.done[row] and token in self.eos_ids:
                    self.done[row] = True
                elif not self.done[row]:
                    self.consume(row, token)
        self.started = True
        return self.process(scores)

    def consume(self, row: int, token: int) -> None:
        raise NotImplementedError

    def process(self, scores: torch.FloatTensor) -> torch.FloatTensor:
        raise NotImplementedError


class CapStrings(RowProcessor):
    """Under string_bounds = "clip" (judge/string_caps.py) closes a value string once it holds
    as many characters as its field allows."""

    def __init__(self, caps: StringCaps, rows: int, eos_ids: Iterable[int]) -> None:
        super().__init__(rows, eos_ids)
        self.caps = caps
        self.trackers = [caps.tracker() for _ in range(rows)]

    def consume(self, row: int, token: int) -> None:
        self.trackers[row].feed(self.caps.token_texts[token])

    def process(self, scores: torch.FloatTensor) -> torch.FloatTensor:
        capped = [r for r, t in enumerate(self.trackers) if t.at_limit and not self.done[r]]
        if capped:
            closing = self.caps.closing_mask(scores.shape[1], scores.device)
            close_strings_(scores, torch.tensor(capped, device=scores.device), closing)
        return scores


class TopLogprobs(LogitsProcessor):
    """Records (values, ids) of each step's top `k` log-probabilities as the processors before
    it left the scores (what `generate`'s `output_scores` holds, without every step's whole
    vocabulary per row); changes nothing."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.steps: list[TopSteps] = []

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        top = torch.log_softmax(scores.float(), dim=-1).topk(self.k, dim=-1)
        self.steps.append((top.values.tolist(), top.indices.tolist()))
        return scores


class AlignedEos(LogitsProcessor):
    """Runs `grammar`, then allows every id of `aliases` exactly where `grammar_eos` stays
    allowed (with the alias's own logit), and nowhere else: a model may stop on several EOS
    ids (Llama-3.1: `<|eot_id|>`, `<|end_of_text|>`) while a grammar knows the tokenizer's
    only, and an extra EOS id that is an ordinary token would end an answer inside a string."""

    def __init__(self, grammar: Processor, grammar_eos: int, aliases: list[int]) -> None:
        self.grammar = grammar
        self.grammar_eos = grammar_eos
        self.aliases = aliases

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        raw = scores[:, self.aliases].clone()
        scores = self.grammar(input_ids, scores)
        complete = torch.isfinite(scores[:, self.grammar_eos : self.grammar_eos + 1])
        scores[:, self.aliases] = torch.where(complete, raw, torch.full_like(raw, float("-inf")))
        return scores


def batch_processors(grammar: Processor, eos_ids: Collection[int], grammar_eos: int | None,
                     vocab: int, caps: StringCaps | None, rows: int
                     ) -> list[Processor]:  # fmt: skip
    """A micro-batch's logits processors, in order: `grammar` with every other EOS id aligned
    to its own (`grammar_eos`, the tokenizer's), then the string caps if any."""
    aliases = eos_aliases(eos_ids, grammar_eos, vocab)
    procs = [AlignedEos(grammar, grammar_eos, aliases) if aliases and grammar_eos is not None
             else grammar]  # fmt: skip
    if caps is not None:
        procs.append(CapStrings(caps, rows, eos_ids))
    return procs


def eos_aliases(eos_ids: Iterable[int], grammar_eos: int | None, vocab: int) -> list[int]:
    """The EOS ids the grammar does not know as EOS (they follow `grammar_eos`'s bit)."""
    if grammar_eos is None:
        return []
    return sorted(i for i in eos_ids if i != grammar_eos and 0 <= i < vocab)
