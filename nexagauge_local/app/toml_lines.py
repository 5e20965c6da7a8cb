"""Where a key of a TOML file sits: the line a message about that key names.

Why hand-written: tomllib (the standard library's reader) returns plain dicts with no
positions, and a message must say `run.toml:12: defaults.redteam.scoring_mode: ...`. A full
position-keeping parser (tomlkit) would be a new dependency for one lookup; this reads only
table headers and `key =` lines, skipping the insides of multi-line strings, which is enough to
name the line of any key the file spells out. A value inside an inline table or array is
placed on its key's line; a key the file lacks (a required field) on its table's header.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_BARE = r"[A-Za-z0-9_-]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"|\'[^\']*\''
_KEY = rf"(?:{_BARE}|{_QUOTED})"
_DOTTED = rf"{_KEY}(?:\s*\.\s*{_KEY})*"
_ARRAY_HEADER = re.compile(rf"^\s*\[\[\s*({_DOTTED})\s*\]\]")
_TABLE_HEADER = re.compile(rf"^\s*\[\s*({_DOTTED})\s*\]")
_ASSIGN = re.compile(rf"^\s*({_DOTTED})\s*=")
_PART = re.compile(_KEY)

Path = tuple[str, ...]


def _parts(dotted: str) -> Path:
    out = []
    for m in _PART.finditer(dotted):
        part = m.group(0)
        out.append(part[1:-1] if part[0] in "\"'" else part)
    return tuple(out)


def _within_arrays(parts: Path, counts: dict[Path, int]) -> Path:
    """A header's path with the index of the latest entry after every array of tables it
    passes through (`[defaults.redteam.metrics.rubric]` belongs to the last metric)."""
    out: Path = ()
    for i, part in enumerate(parts):
        out = (*out, part)
        if i < len(parts) - 1 and out in counts:
            out = (*out, str(counts[out] - 1))
    return out


class KeyLines:
    """key path (as strings; an array of tables' entries by index) -> its 1-based line."""

    def __init__(self, text: str) -> None:
        self._lines: dict[Path, int] = {}
        table: Path = ()
        counts: dict[Path, int] = {}
        in_string: str | None = None  # the delimiter of a multi-line string being read
        for number, line in enumerate(text.splitlines(), 1):
            if in_string is not None:
                if line.count(in_string) % 2:
                    in_string = None
                continue
            if m := _ARRAY_HEADER.match(line):
                base = _within_arrays(_parts(m.group(1)), counts)
                index = counts.get(base, 0)
                counts[base] = index + 1
                table = (*base, str(index))
                self._lines.setdefault(base, number)
                self._lines[table] = number
                continue
            if m := _TABLE_HEADER.match(line):
                table = _within_arrays(_parts(m.group(1)), counts)
                self._lines.setdefault(table, number)
                continue
            if m := _ASSIGN.match(line):
                self._lines.setdefault((*table, *_parts(m.group(1))), number)
                rest = line[m.end():]
                for quote in ('"""', "'''"):
                    if rest.count(quote) % 2:
                        in_string = quote
                        break

    def line_of(self, loc: Sequence[str | int]) -> int:
        """The line of `loc`, or of its nearest enclosing key or table the file spells out
        (1 when none: a message still names the file)."""
        path = tuple(str(p) for p in loc)
        while path:
            if path in self._lines:
                return self._lines[path]
            path = path[:-1]
        return 1
