"""Constrained greedy decoding for a batch of judge prompts, written for CPU throughput.

Why not `model.generate` (what `outlines.Generator.batch` calls): judge prompts are long
(rubric + case) and answers short, and in a batch the answers have very different lengths.
`generate` re-prefills the shared rubric for every row and keeps every finished row in the
batch until the longest answer ends. This loop:
- on CPU, decodes against family prefixes computed once and never copied (`prefixes`:
  hf/cascade.py, hf/kv_cache.py): each row's suffix is prefilled alone, rows of different
  families and schemas share the decode steps (a CPU stand-in for vLLM's prefix caching and
  paged KV); elsewhere it prefills the batch's longest common token prefix once and copies its
  KV cache to every row;
- drops a row from the batch (and its KV cache) the moment it emits EOS or reaches max_tokens,
  so a single long answer no longer runs 63 idle rows with it, and hands the finished row to
  `on_finished` at once (the client caches it: a kill loses only rows still decoding);
- charges each row the device time it used: its prompt-length share of the prefill, then an
  equal share of every step it was in (a row that finishes early is not charged the steps of
  the long answers after it);
- applies the schema's compiled grammar (hf/grammar.py: llguidance or outlines-core, compiled
  once per schema by the backend) through one bitmask per row, and records the top-k logprobs
  of the constrained distribution in the same pass;
- shares one EOS set with the grammar: the loop stops on every EOS id of the model (the
  tokenizer's and the generation config's, e.g. Llama-3.1's `<|eot_id|>` and
  `<|end_of_text|>`), but both grammar engines know only the tokenizer's. An extra EOS id that
  is an ordinary token of the vocabulary would be allowed inside a JSON string and end the
  answer there; so every EOS id is allowed exactly where the grammar allows its own EOS (the
  answer is complete), and nowhere else.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from nexagauge_local.judge.hf.families import common_prefix_len
from nexagauge_local.judge.hf.grammar import CompiledGrammar, bitmask_words
from nexagauge_local.judge.hf.kv_cache import RowCache, SharedPrefix
from nexagauge_local.judge.string_caps import StringCaps, close_strings_

MIN_SHARED_PREFIX = 8


@dataclass
class Decoded:
    token_ids: list[int] = field(default_factory=list)
    stopped: bool = False  # EOS emitted (False = cut at max_new_tokens)
    top_logprobs: list[tuple[list[float], list[int]]] = field(default_factory=list)
    seconds: float = 0.0  # device time this row used (see the module docstring)


OnFinished = Callable[[list[int], list[Decoded]], None]  # (prompt positions, their rows)


@functools.cache
def cache_keyword(model_class: type[torch.nn.Module]) -> str:
    """The forward's name for the KV cache: `cache` since transformers 5.x deprecated
    `past_key_values` (a FutureWarning on every decode run's stderr), which older releases
    (the project allows >= 4.56) still need. Per class: read once, not per step."""
    try:
        params = inspect.signature(model_class.forward).parameters
    except (AttributeError, TypeError, ValueError):
        return "past_key_values"
    return "cache" if "cache" in params else "past_key_values"


def _forward(model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor,
             pos: torch.Tensor, cache: Any) -> torch.Tensor:
    # a class is hashable; mypy reads type[X].__hash__ as the instances' unbound method
    keyword = cache_keyword(type(model))  # type: ignore[arg-type]
    out = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True,
                logits_to_keep=1, **{keyword: cache})
    logits: torch.Tensor = out.logits
    return logits[:, -1, :].float()


def compute_prefix(model: Any, ids: list[int]) -> SharedPrefix:
    """Run a family's prefix once and keep its keys and values (no autograd graph: that would
    keep every activation of the forward alive as long as the prefix)."""
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    t = torch.tensor([ids], device=model.device)
    with torch.inference_mode():
        _forward(model, t, torch.ones_like(t), torch.arange(len(ids), device=model.device)
                 .unsqueeze(0), cache)  # fmt: skip
    return SharedPrefix(len(ids), tuple(_layer_kv(layer) for layer in cache.layers))


def _layer_kv(layer: object) -> tuple[torch.Tensor, torch.Tensor]:
    """A cache layer's (keys, values); a layer without both tensors (a linear-attention layer
    keeps a state instead) cannot be a shared prefix."""
    keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
    if not isinstance(keys, torch.Tensor) or not isinstance(values, torch.Tensor):
        raise TypeError(f"{type(layer).__name__} keeps no key/value tensors to share")
    return keys, values


def _forward_rows(model: Any, ids: torch.Tensor, pos: torch.Tensor, rows: RowCache
                  ) -> torch.Tensor:
    """A forward against family prefixes: transformers' cache off, the row cache written and
    read by the attention function (hf/cascade.py)."""
    before = rows.writes
    out = model(input_ids=ids, position_ids=pos, use_cache=False, logits_to_keep=1,
                row_cache=rows)
    if rows.writes == before:  # a transformers that drops the keyword: never decode blind
        raise RuntimeError("the model's attention never saw the row cache (hf/cascade.py)")
    logits: torch.Tensor = out.logits
    return logits[:, -1, :].float()


def _prefill(model: Any, prompts: list[list[int]], pad_id: int, device: str) -> tuple[
        torch.Tensor, torch.Tensor, torch.Tensor, Any]:
    """KV cache for all prompts; returns (last logits, attention mask, next positions, cache).

    Layout per row: [shared prefix][left padding][own suffix]; padding is masked out and
    position ids count real tokens only, so each row sees exactly its own prompt.
    """
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    b = len(prompts)
    shared = common_prefix_len(prompts) if b > 1 else 0
    if shared < MIN_SHARED_PREFIX:
        shared = 0
    mask_parts: list[torch.Tensor] = []
    if shared:
        head = torch.tensor([prompts[0][:shared]], device=device)
        pmask = torch.ones_like(head)
        pos = torch.arange(shared, device=device).unsqueeze(0)
        _forward(model, head, pmask, pos, cache)
        cache.batch_repeat_interleave(b)
        mask_parts.append(pmask.expand(b, -1))
    suffixes = [p[shared:] for p in prompts]
    width = max(len(s) for s in suffixes)
    ids = torch.full((b, width), pad_id, dtype=torch.long, device=device)
    smask = torch.zeros((b, width), dtype=torch.long, device=device)
    pos = torch.zeros((b, width), dtype=torch.long, device=device)
    for i, s in enumerate(suffixes):
        ids[i, width - len(s):] = torch.tensor(s, device=device)
        smask[i, width - len(s):] = 1
        pos[i, width - len(s):] = torch.arange(shared, shared + len(s), device=device)
    mask = torch.cat(mask_parts + [smask], dim=1)
    logits = _forward(model, ids, mask, pos, cache)
    next_pos = torch.tensor([len(p) for p in prompts], device=device)
    return logits, mask, next_pos, cache


def _prefill_rows(model: Any, prompts: list[list[int]], device: str,
                  prefixes: list[SharedPrefix]) -> tuple[torch.Tensor, torch.Tensor, RowCache]:
    """`_prefill` against family prefixes: each row's suffix on its own, into one row cache.
    A suffix of a few hundred tokens is matrix enough for full-speed GEMMs alone, and alone it
    needs no padding (29% of a 6-row batch's tokens on the peer sample) and gets the causal
    kernel, which skips the masked half of attention. Returns (last logits, next positions,
    row cache)."""
    suffixes = [p[f.length:] for p, f in zip(prompts, prefixes)]
    rows = RowCache.for_model(model, prefixes, [len(s) for s in suffixes])
    logits: list[torch.Tensor] = []
    for i, (s, f) in enumerate(zip(suffixes, prefixes)):
        rows.prefill_row(i)
        ids = torch.tensor([s], device=device)
        pos = torch.arange(f.length, f.length + len(s), device=device).unsqueeze(0)
        logits.append(_forward_rows(model, ids, pos, rows))
    rows.prefill_row(None)
    next_pos = torch.tensor([len(p) for p in prompts], device=device)
    return torch.cat(logits), next_pos, rows


@dataclass(frozen=True)
class RowRule:
    """What constrains one row: its schema's grammar and string caps, and its token limit.
    Rows of different schemas decode in one batch (a step's cost is mostly the weights)."""

    grammar: CompiledGrammar
    max_new_tokens: int
    caps: StringCaps | None = None


@dataclass
class _KV:
    """The KV state of the rows still decoding: a RowCache against family prefixes (CPU), or
    a padded DynamicCache with its attention mask. `keep` drops finished rows from it."""

    model: Any
    device: str
    pos: torch.Tensor
    rows: RowCache | None = None
    cache: Any = None
    mask: torch.Tensor | None = None

    def keep(self, sel: torch.Tensor) -> None:
        if self.rows is not None:
            self.rows.select(sel)
        else:
            self.cache.batch_select_indices(sel)
            assert self.mask is not None
            self.mask = self.mask[sel]
        self.pos = self.pos[sel]

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if self.rows is not None:
            self.rows.begin_step()
            logits = _forward_rows(self.model, ids, self.pos.unsqueeze(1), self.rows)
        else:
            assert self.mask is not None
            ones = torch.ones((len(ids), 1), dtype=self.mask.dtype, device=self.device)
            self.mask = torch.cat([self.mask, ones], 1)
            logits = _forward(self.model, ids, self.mask, self.pos.unsqueeze(1), self.cache)
        self.pos = self.pos + 1
        return logits


def _prefilled(model: Any, prompts: list[list[int]], pad_id: int, device: str,
               prefixes: list[SharedPrefix] | None) -> tuple[torch.Tensor, _KV]:
    if prefixes is not None:
        logits, pos, row_cache = _prefill_rows(model, prompts, device, prefixes)
        return logits, _KV(model, device, pos, rows=row_cache)
    logits, mask, pos, cache = _prefill(model, prompts, pad_id, device)
    return logits, _KV(model, device, pos, cache=cache, mask=mask)


@dataclass
class _Rows:
    """Per request: its rule, grammar matcher and string tracker, and what it decoded."""

    rules: list[RowRule]
    out: list[Decoded]
    eos_ids: set[int]
    matchers: list[Any] = field(init=False)
    trackers: list[Any] = field(init=False)

    def __post_init__(self) -> None:
        self.matchers = [rule.grammar.matcher() for rule in self.rules]
        self.trackers = [rule.caps.tracker() if rule.caps else None for rule in self.rules]

    def masked(self, logits: torch.Tensor, rows: list[int], aliases: list[int]) -> torch.Tensor:
        """`logits` with what each row's grammar (and a string at its bound) forbids masked."""
        vocab = logits.shape[1]
        bitmask = torch.zeros((len(rows), bitmask_words(vocab)), dtype=torch.int32)
        for j, r in enumerate(rows):
            self.matchers[r].fill(bitmask, j)
        grammar_eos = self.rules[0].grammar.grammar_eos
        logits = _apply_bitmask(logits, bitmask.to(logits.device), grammar_eos, aliases)
        capped = [j for j, r in enumerate(rows)
                  if (t := self.trackers[r]) is not None and t.at_limit]  # fmt: skip
        if capped:  # every row's caps share the one tokenizer, so one closing mask serves all
            caps = self.rules[rows[capped[0]]].caps
            assert caps is not None
            closing = caps.closing_mask(logits.shape[1], logits.device)
            close_strings_(logits, torch.tensor(capped, device=logits.device), closing)
        return logits

    def advance(self, r: int, tok: int) -> bool:
        """Record row r's token; True while the row goes on decoding."""
        out = self.out[r]
        out.token_ids.append(tok)
        if tok in self.eos_ids:
            out.stopped = True
            return False
        self.matchers[r].advance(tok)
        tracker, caps = self.trackers[r], self.rules[r].caps
        if tracker is not None and caps is not None:
            tracker.feed(caps.token_texts[tok])
        return len(out.token_ids) < self.rules[r].max_new_tokens


def constrained_greedy(
    model: Any,
    grammar: CompiledGrammar | None,
    prompts: list[list[int]],
    *,
    max_new_tokens: int = 0,
    eos_ids: set[int],
    pad_id: int,
    top_k: int = 0,
    on_finished: OnFinished | None = None,
    caps: StringCaps | None = None,
    prefixes: list[SharedPrefix] | None = None,
    rules: list[RowRule] | None = None,
) -> list[Decoded]:
    """Greedy decode every prompt under a schema's compiled `grammar` (hf/grammar.py).

    Where the grammar knows one EOS id only (`grammar.grammar_eos`, outlines), the other ids of
    `eos_ids` follow its allowed bit (see the module docstring). `on_finished` gets the rows
    that ended at each step, complete (tokens and seconds), before the batch goes on. `caps`
    (string_bounds = "clip") makes a value string close once it reaches its field's bound.
    `prefixes`: each prompt's family prefix, computed once (hf/cascade.py), which the
    prompt starts with. `rules`: each row's own grammar, caps and limit, in place of
    `grammar`, `caps` and `max_new_tokens` (all rules' grammars must know the same EOS)."""
    out = [Decoded() for _ in prompts]
    if rules is None:
        if grammar is None:
            raise ValueError("constrained_greedy needs a grammar or per-row rules")
        rules = [RowRule(grammar, max_new_tokens, caps)] * len(prompts)
    if not prompts or max(r.max_new_tokens for r in rules) < 1:
        return out
    if len({r.grammar.grammar_eos for r in rules}) > 1:
        raise ValueError("rows of one batch must share the grammar's EOS id")
    with torch.inference_mode():
        started = time.perf_counter()
        logits, kv = _prefilled(model, prompts, pad_id, str(model.device), prefixes)
        last = time.perf_counter()
        total_len = sum(len(p) for p in prompts) or 1
        for d, p in zip(out, prompts):
            d.seconds = (last - started) * len(p) / total_len
        state = _Rows(rules, out, eos_ids)
        rows = list(range(len(prompts)))  # batch position -> request index
        aliases = eos_aliases(eos_ids, rules[0].grammar.grammar_eos, logits.shape[1])
        for _step in range(max(rule.max_new_tokens for rule in rules)):
            logits = state.masked(logits, rows, aliases)
            if top_k:
                top = torch.log_softmax(logits, dim=-1).topk(top_k, dim=-1)
                values, indices = top.values.cpu().tolist(), top.indices.cpu().tolist()
                for j, r in enumerate(rows):
                    out[r].top_logprobs.append((values[j], indices[j]))
            chosen = logits.argmax(dim=-1).cpu().tolist()
            keep = [j for j, r in enumerate(rows) if state.advance(r, chosen[j])]
            now = time.perf_counter()
            for r in rows:  # the previous forward and this step's masks served every row here
                out[r].seconds += (now - last) / len(rows)
            if on_finished and len(keep) < len(rows):
                kept = {rows[j] for j in keep}
                ended = [r for r in rows if r not in kept]
                on_finished(ended, [out[r] for r in ended])
            last = time.perf_counter()  # the handover (a cache write) is nobody's device time
            if not keep:
                break
            if len(keep) < len(rows):
                kv.keep(torch.tensor(keep, device=kv.device))
                rows = [rows[j] for j in keep]
            logits = kv.forward(torch.tensor([[out[r].token_ids[-1]] for r in rows],
                                             device=kv.device))
    return out


def eos_aliases(eos_ids: set[int], grammar_eos: int | None, vocab: int) -> list[int]:
    """The EOS ids the grammar does not know as EOS (they follow `grammar_eos`'s bit)."""
    if grammar_eos is None:
        return []
    return sorted(i for i in eos_ids if i != grammar_eos and 0 <= i < vocab)


def _apply_bitmask(
    logits: torch.Tensor,
    bitmask: torch.Tensor,
    grammar_eos: int | None = None,
    aliases: list[int] | None = None,
) -> torch.Tensor:
    """Set disallowed tokens to -inf (eager; unpacks the 32-bit words of the bitmask); each
    alias EOS id is allowed exactly where `grammar_eos` is."""
    bits = torch.arange(32, device=bitmask.device, dtype=torch.int32)
    allowed = ((bitmask.unsqueeze(-1) >> bits) & 1).bool().view(bitmask.shape[0], -1)
    allowed = allowed[:, : logits.shape[1]]
    if aliases and grammar_eos is not None and grammar_eos < allowed.shape[1]:
        allowed[:, aliases] = allowed[:, grammar_eos : grammar_eos + 1].clone()
    return logits.masked_fill(~allowed, float("-inf"))
