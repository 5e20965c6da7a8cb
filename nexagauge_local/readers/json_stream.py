"""A JSON array read element by element from a text stream, with the standard library's parser.

Why not parse the file whole: a JSON array has no record boundary before its closing bracket,
so `json.load` holds every record at once, and a 1M-record array costs gigabytes where the same
records as JSONL cost a line buffer. Here only a window of the text (64 KiB, or one element if
larger) and the element being decoded are held.

Why `json`'s own decoder and not a streaming library (ijson): the records must be exactly what
`json.load` gives, since case ids and the audit's record hashes are computed from them. ijson's
C backend turns an escaped lone surrogate (`"\\ud800"`) into `?` (so the lone-surrogate check
never sees it) and refuses integers past 64 bits, and none of its backends reads the `NaN` and
`Infinity` that Python's `json.dumps` writes. `JSONDecoder.raw_decode` decodes one value from a
position, at C speed, so each element is handed to it once its text is in the window.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

_DECODER = json.JSONDecoder()
# JSON's four whitespace characters, as json skips them (typeshed's json.decoder omits it)
_WHITESPACE = json.decoder.WHITESPACE  # type: ignore[attr-defined]
# A value decoded (or failing) this close to the window's end may be cut by the window: `12|34`
# decodes as 12, `1.|5` as 1, `tr|ue` fails. Such a value is decoded again with more text.
_SLACK = 16


class JsonSyntaxError(ValueError):
    """The text is not JSON; `msg` is json's wording, `lineno` the 1-based line in the file."""

    def __init__(self, msg: str, lineno: int) -> None:
        super().__init__(f"{msg}: line {lineno}")
        self.msg, self.lineno = msg, lineno


class NotAnArray(ValueError):
    """The first value in the text is not an array (`first` is its first character)."""

    def __init__(self, first: str) -> None:
        super().__init__(f"expected a JSON array, found {first!r}")
        self.first = first


class _Window:
    """The unread part of a text stream, as much of it as the value being decoded needs."""

    CHUNK = 1 << 16

    def __init__(self, fh: IO[str]) -> None:
        self._fh = fh
        self._buf, self._pos = "", 0
        self._line = 1  # the line _buf[0] is on
        self._eof = False

    def _more(self) -> bool:
        """Drop what was read, append the next chunk; False at the end of the stream.

        The chunk is at least as long as what is kept, so an element larger than a chunk is
        decoded O(log n) times rather than once per chunk.
        """
        if self._eof:
            return False
        self._line += self._buf.count("\n", 0, self._pos)
        self._buf = self._buf[self._pos:]
        self._pos = 0
        chunk = self._fh.read(max(self.CHUNK, len(self._buf)))
        if not chunk:
            self._eof = True
            return False
        self._buf += chunk
        return True

    def _lineno(self, pos: int) -> int:
        return self._line + self._buf.count("\n", 0, pos)

    def error(self, msg: str, pos: int | None = None) -> JsonSyntaxError:
        return JsonSyntaxError(msg, self._lineno(self._pos if pos is None else pos))

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end); the window moves to it."""
        while True:
            self._pos = _WHITESPACE.match(self._buf, self._pos).end()
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._more():
                return ""

    def skip(self) -> None:
        """Step over the character peek() returned."""
        self._pos += 1

    def value(self) -> Any:
        """Decode the next value (after any whitespace), reading on while the window may cut it."""
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as exc:
                if self._may_be_cut(exc.pos, exc.msg):
                    self._more()  # moves the window: decode again, at the end of the text too
                    continue
                raise self.error(exc.msg, exc.pos) from None
            if self._may_be_cut(end, ""):
                self._more()
                continue
            self._pos = end
            return value

    def _may_be_cut(self, pos: int, msg: str) -> bool:
        # An unterminated string is reported where it starts, however far from the window's end.
        return not self._eof and (
            pos >= len(self._buf) - _SLACK or msg.startswith("Unterminated string"))


def iter_array(fh: IO[str]) -> Iterator[Any]:
    """Each element of the JSON array that is `fh`'s whole text, in order.

    Raises NotAnArray before anything is yielded when the text does not start with `[`, and
    JsonSyntaxError where the text stops being JSON (trailing text after `]` included), with
    json's message and the line. Elements before that point have been yielded by then.
    """
    window = _Window(fh)
    first = window.peek()
    if first != "[":
        raise NotAnArray(first)
    yield from _array(window)


def value_type(fh: IO[str]) -> type:
    """The type of `fh`'s whole text read as one JSON value, like `type(json.load(fh))`;
    JsonSyntaxError if it is not one. An array is read element by element and not kept, so a
    whole-file check holds one record at a time."""
    window = _Window(fh)
    if window.peek() == "[":
        for _ in _array(window):
            pass
        return list
    kind = type(window.value())
    _end(window)
    return kind


def _array(window: _Window) -> Iterator[Any]:
    window.skip()  # the `[`
    if window.peek() == "]":
        window.skip()
    else:
        yield from _elements(window)
    _end(window)


def _elements(window: _Window) -> Iterator[Any]:
    while True:
        yield window.value()
        delimiter = window.peek()
        if delimiter not in (",", "]"):
            raise window.error("Expecting ',' delimiter")
        window.skip()
        if delimiter == "]":
            return


def _end(window: _Window) -> None:
    if window.peek() != "":
        raise window.error("Extra data")
