"""String bounds enforced by the hf decode loop instead of the grammar (string_bounds = "clip").

Why: a string's maxLength inside the grammar is a counted repetition that costs outlines 1.8 GB
and 15 s per verdict schema (`scripts/bench_grammar_bounds.py`), but without it nothing makes a
small judge close a string: on the bundled sample the demo judge then ran 4 of 69 redteam answers
to max_tokens. So the grammar leaves lengths open and the loop watches each answer's JSON text:
once a value string has as many characters as its field allows, only tokens that close it (text
starting with `"`) stay allowed. `parse_output` clips what a longer last token added.

No library tracks "which field am I in and how long is this string" over a token stream for a
grammar engine we do not control, hence this small hand-written scanner. It relies on what the
grammar guarantees: compact, valid JSON (no whitespace between tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from nexagauge_local.judge.schemas import resolve_ref


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


class StringCaps:
    """One schema's caps over one tokenizer: a tracker per answer and the closing tokens."""

    def __init__(self, js: dict[str, Any], token_texts: Sequence[str]) -> None:
        self.limits = string_limits(js)
        self.token_texts = token_texts
        self.closing = torch.tensor([t.startswith('"') for t in token_texts], dtype=torch.bool)

    def tracker(self) -> StringTracker:
        return StringTracker(self.limits)

    def restrict(self, logits: torch.Tensor) -> torch.Tensor:
        """One row's masked logits with every token that does not close the string at -inf;
        the row unchanged when the grammar allows no closing token (it then knows better)."""
        closing = self.closing.to(logits.device)[: logits.shape[0]]
        capped = logits.clone()
        capped[: closing.shape[0]][~closing] = float("-inf")
        if closing.shape[0] < logits.shape[0]:
            capped[closing.shape[0] :] = float("-inf")
        return capped if torch.isfinite(capped).any() else logits


def token_texts(tokenizer: Any, vocab: int) -> list[str]:
    """Each token id's own text (ids past the tokenizer's vocabulary: empty)."""
    n = min(vocab, len(tokenizer))
    texts = tokenizer.batch_decode([[i] for i in range(n)], skip_special_tokens=False,
                                   clean_up_tokenization_spaces=False)  # fmt: skip
    return list(texts) + [""] * (vocab - n)
