"""String bounds kept beside the grammar, on both engines (string_bounds = "clip").

Why: a string's maxLength inside the grammar is a counted repetition. It costs outlines 1.8 GB
and 15 s per verdict schema, and xgrammar 80-200 us per token mask on real answers
(`scripts/bench_grammar_bounds.py`, `scripts/bench_vllm_host.py`): on a GPU that makes the
grammar, not the model, set the pace. Without it nothing makes a small judge close a string (on
vLLM the demo judge wrote 8.5x the tokens and ran 48 of 256 answers to max_tokens). So the
grammar leaves lengths open and this module watches each answer's JSON text: once a value
string has as many characters as its field allows, only tokens that close it (text starting
with `"`) stay allowed. `parse_output` clips what a longer last token added. The hf backend
(hf/processors.py) and vLLM's logits processor (vllm/caps.py) both use it, so the two engines end a
string at the same character.

No library tracks "which field am I in and how long is this string" over a token stream for a
grammar engine we do not control, hence this small hand-written scanner. It relies on what the
grammar guarantees: compact, valid JSON (no whitespace between tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from nexagauge_local.judge.schemas import resolve_ref

if TYPE_CHECKING:  # torch is imported where masks are made: the vLLM backend imports this
    import torch  # module, and a fully cached re-score must not pay torch's import


def string_limits(js: dict[str, Any]) -> dict[str, int]:
    """{property name: maxLength} for every string property and list-of-strings property of a
    JSON schema (nested objects and $defs included). A name used twice keeps its larger bound:
    the cap only has to end the string, and `parse_output` clips to the exact one."""
    defs = js.get("$defs", {})
    limits: dict[str, int] = {}

    def visit(node: dict[str, Any]) -> None:
        node = resolve_ref(node, defs)
        for name, prop in node.get("properties", {}).items():
            prop = resolve_ref(prop, defs)
            leaf = resolve_ref(prop.get("items", {}), defs) if prop.get("type") == "array" else prop
            if leaf.get("type") == "string" and "maxLength" in leaf:
                limits[name] = max(limits.get(name, 0), int(leaf["maxLength"]))
            visit(leaf)

    visit(js)
    return limits


@lru_cache(maxsize=256)
def schema_limits(schema: type[BaseModel]) -> dict[str, int]:
    """`string_limits` of a node schema, made once per schema class (a node sends thousands of
    requests with a handful of schemas). Shared: callers must not change it."""
    return string_limits(schema.model_json_schema())


@dataclass
class _Frame:
    is_object: bool
    key: str | None = None  # object: the last key read; array: the key that holds the array
    expect_key: bool = True


@dataclass
class StringTracker:
    """Where one answer's JSON text is: inside which value string, and how long it is so far."""

    limits: dict[str, int]
    stack: list[_Frame] = field(default_factory=list)
    in_string: bool = False
    is_key: bool = False
    escaped: bool = False
    chars: int = 0
    text: list[str] = field(default_factory=list)  # the key being read
    limit: int | None = None

    @property
    def at_limit(self) -> bool:
        """Inside a bounded value string that has reached its bound: it must close now."""
        return self.in_string and self.limit is not None and self.chars >= self.limit

    def feed(self, piece: str) -> None:
        for ch in piece:
            if self.in_string:
                self._string_char(ch)
            else:
                self._structure_char(ch)

    def _string_char(self, ch: str) -> None:
        if self.escaped:
            self.escaped = False
        elif ch == "\\":
            self.escaped = True
        elif ch == '"':
            self.in_string = False
            if self.is_key and self.stack:
                self.stack[-1].key = "".join(self.text)
            return
        self.chars += 1
        if self.is_key:
            self.text.append(ch)

    def _structure_char(self, ch: str) -> None:
        top = self.stack[-1] if self.stack else None
        if ch == "{":
            self.stack.append(_Frame(is_object=True))
        elif ch == "[":
            self.stack.append(_Frame(is_object=False, key=top.key if top else None))
        elif ch in "}]":
            if self.stack:
                self.stack.pop()
        elif ch == ":" and top is not None:
            top.expect_key = False
        elif ch == "," and top is not None and top.is_object:
            top.expect_key = True
        elif ch == '"':
            self.in_string, self.escaped, self.chars, self.text = True, False, 0, []
            self.is_key = top is not None and top.is_object and top.expect_key
            key = None if top is None or self.is_key else top.key
            self.limit = self.limits.get(key) if key is not None else None


def closing_tokens(texts: Sequence[str]) -> torch.Tensor:
    """Which token ids close a string: their text starts with `"`."""
    import torch

    return torch.tensor([t.startswith('"') for t in texts], dtype=torch.bool)


def close_strings_(logits: torch.Tensor, rows: torch.Tensor, closing: torch.Tensor) -> None:
    """In place: in each of `rows` (a string at its bound), every token that does not close
    the string goes to -inf; a row where the grammar allows no closing token is left as it
    was (the grammar knows better there). One batched gather/where/scatter, no host sync, so
    a GPU engine's step is not stalled. `closing` covers the whole vocabulary (ids past the
    tokenizer's are False)."""
    import torch

    sub = logits.index_select(0, rows)
    capped = sub.masked_fill(~closing, float("-inf"))
    allowed = torch.isfinite(capped).any(dim=1, keepdim=True)
    logits.index_copy_(0, rows, torch.where(allowed, capped, sub))


class StringCaps:
    """One schema's caps over one tokenizer: a tracker per answer and the closing tokens."""

    def __init__(self, js: dict[str, Any], token_texts: Sequence[str]) -> None:
        self.limits = string_limits(js)
        self.token_texts = token_texts
        self.closing = closing_tokens(token_texts)
        self._masks: dict[tuple[int, str], torch.Tensor] = {}

    def closing_mask(self, vocab: int, device: torch.device) -> torch.Tensor:
        """`closing` fitted to a logits row of `vocab` ids on `device` (made once)."""
        key = (vocab, str(device))
        if key not in self._masks:
            self._masks[key] = padded(self.closing, vocab).to(device)
        return self._masks[key]

    def tracker(self) -> StringTracker:
        return StringTracker(self.limits)


def padded(closing: torch.Tensor, vocab: int) -> torch.Tensor:
    """`closing` cut or padded with False to `vocab` ids (a model's logits may be wider than
    its tokenizer's vocabulary)."""
    import torch

    if closing.shape[0] >= vocab:
        return closing[:vocab]
    return torch.cat([closing, torch.zeros(vocab - closing.shape[0], dtype=torch.bool)])


def token_texts(tokenizer: Any, vocab: int) -> list[str]:
    """Each token id's own text (ids past the tokenizer's vocabulary: empty)."""
    n = min(vocab, len(tokenizer))
    texts = tokenizer.batch_decode([[i] for i in range(n)], skip_special_tokens=False,
                                   clean_up_tokenization_spaces=False)  # fmt: skip
    return list(texts) + [""] * (vocab - n)
