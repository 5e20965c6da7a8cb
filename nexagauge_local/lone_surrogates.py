"""Lone UTF-16 surrogates: valid JSON (`"\\ud800"`), but no UTF-8 text can carry them.

Why reject them at scan rather than repair: a surrogate half in an evaluated field is a broken
encoding upstream (a string cut inside an emoji's UTF-16 pair, say), and the judge would be
shown something other than what the record says. The record is reported like any bad record
(FILE:LINE: field: message, exit 2, or listed and skipped under --on-error skip), so nothing
half-written ever reaches a case report, and the user decides what the text should be. The
same check runs on every input format: JSON, JSONL and the JSON inside CSV cells.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

_LONE = re.compile(r"[\ud800-\udfff]")  # a well-formed pair is one code point once decoded


def lone_surrogates(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(field path, message) for every string in `value` (keys included) holding a lone
    surrogate. Paths read like validation errors: `output`, `redteam.metrics.0.name`."""
    if isinstance(value, str):
        match = _LONE.search(value)
        if match:
            yield path or "(record)", (
                f"holds a lone UTF-16 surrogate (\\u{ord(match.group()):04x} at character "
                f"{match.start()}): valid JSON, but no UTF-8 text can carry it; fix the text "
                "(U+FFFD is the usual stand-in for a lost character)")
    elif isinstance(value, dict):
        for key, item in value.items():
            sub = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and _LONE.search(key):
                yield from lone_surrogates(key, sub)
            yield from lone_surrogates(item, sub)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from lone_surrogates(item, f"{path}.{i}" if path else str(i))
