"""The limits of the parsers behind the input formats, stated once, and what passing one says.

Why: Python's parsers have limits a real dataset can reach, and each used to end the run with a
traceback. `csv` refuses a cell over 131,072 characters (a long RAG context or a pasted
document is legitimately longer), so it is raised to CSV_FIELD_LIMIT. `json` recurses once per
nesting level and fails with RecursionError near Python's recursion limit (~1,000 levels,
less when the stack is deeper), and any later walk of such a record would too; a record nested
deeper than MAX_NESTING is a bad record, reported and skipped like any other, at one stated
depth rather than one that depends on the stack. There is no limit on a line's length beyond
memory: a JSONL line is read whole, as its record must be.
"""

from __future__ import annotations

import csv
from typing import Any

CSV_FIELD_LIMIT = 1 << 28  # characters in one CSV/TSV cell (256 Mi)
MAX_NESTING = 100  # levels of objects and arrays in one record; real records use under ten
TOO_DEEP = f"nested more than {MAX_NESTING} levels deep (the limit for a record)"


def allow_long_csv_fields() -> None:
    """Raise the csv module's cell limit (process-wide: csv has no per-reader setting) to
    CSV_FIELD_LIMIT, never lowering a larger one a caller set."""
    if csv.field_size_limit() < CSV_FIELD_LIMIT:
        csv.field_size_limit(CSV_FIELD_LIMIT)


def too_deep(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether `value` nests dicts and lists more than `limit` levels deep.

    Hand-written with an explicit stack because a recursive walk is what fails on exactly
    the records it must find; it visits containers only, not the text inside them.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False
