"""Reading datasets: JSON array, JSONL or CSV into typed cases, with messages that name the spot.

Every problem is reported as `file:line: field: message` (or `file[index]` for JSON arrays) so a
user can fix a 100k-line file without guessing. Readers are generators: JSONL and CSV stream,
so a shard of cases is all that sits in memory.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from nexagauge_local.blocks import BlockModels
from nexagauge_local.case import TEXT_FIELDS, Case, SourceRef
from nexagauge_local.lone_surrogates import lone_surrogates

# Canonical field -> accepted aliases, in priority order (DESIGN.md section 1, plus the ragas
# and deepeval names so their datasets load unchanged). Keys are matched case-insensitively.
ALIASES: dict[str, tuple[str, ...]] = {
    "case_id": ("case_id", "id"),
    "output": ("output", "generation", "response", "answer", "completion", "actual_output"),
    "input": ("input", "question", "query", "prompt", "user_input"),
    "context": ("context", "contexts", "documents", "retrieval_context", "retrieved_contexts"),
    "reference": ("reference", "ground_truth", "gold_answer", "label", "expected_output"),
}

def logical_fields(blocks: BlockModels) -> tuple[str, ...]:
    """Every name `--field LOGICAL=COLUMN` accepts: the text fields and the node blocks."""
    return (*ALIASES, *blocks)

_CONTEXT_JOIN = "\n\n"


@dataclass(frozen=True)
class RecordError:
    source: SourceRef
    field: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.field}: " if self.field else ""
        return f"{self.source}: {where}{self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.source.file,
            "line": self.source.line,
            "index": self.source.index,
            "field": self.field,
            "reason": self.message,
        }


class RecordsError(Exception):
    """Raised when a dataset cannot be used; carries one RecordError per problem."""

    def __init__(self, errors: list[RecordError]):
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


class DatasetError(RecordsError):
    """The file as a whole cannot be read as a dataset (empty, a directory, not text, wrong shape).

    Why a subclass: these are not bad records that `--on-error skip` could step over, so they are
    raised even in skip mode; being a RecordsError, every caller that reports bad input already
    turns them into `FILE: what is wrong` and exit 2.
    """

    def __init__(self, name: str, message: str):
        super().__init__([RecordError(SourceRef(file=name), None, message)])


@dataclass(frozen=True)
class RawRecord:
    data: dict[str, Any] | None
    source: SourceRef
    error: str | None = None


def parse_field_map(pairs: tuple[str, ...] | list[str], blocks: BlockModels) -> dict[str, str]:
    """`--field LOGICAL=COLUMN` pairs into a mapping; raises ValueError with a clear message.
    `blocks` is the graph's block registry (a block may be mapped to a column too)."""
    known = logical_fields(blocks)
    mapping: dict[str, str] = {}
    for pair in pairs:
        logical, sep, column = pair.partition("=")
        logical, column = logical.strip().lower(), column.strip()
        if not sep or not logical or not column:
            raise ValueError(f"--field {pair!r}: expected LOGICAL=COLUMN, e.g. output=model_answer")
        if logical not in known:
            raise ValueError(f"--field {pair!r}: {logical!r} is not one of {', '.join(known)}")
        mapping[logical] = column
    return mapping


# ---------------------------------------------------------------- raw readers

# Byte-order marks and the codec that reads past them, longest first (a UTF-32 LE mark begins
# with the UTF-16 LE one). Without a mark the file must be UTF-8: guessing among legacy code
# pages would turn a wrong guess into silently garbled text, which is worse than a clear error.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_SNIFF_BYTES = 4096
NOT_TEXT = "not a text file (expected UTF-8, or UTF-16 with a byte-order mark)"


def check_file(path: Path, name: str | None = None) -> None:
    """Raise DatasetError unless `path` is an existing, non-empty regular file."""
    name = name or str(path)
    if path.is_dir():
        raise DatasetError(name, "is a directory; --input takes a dataset file (JSON, JSONL or CSV)")
    if not path.exists():
        raise DatasetError(name, "no such file")
    if not path.is_file():
        raise DatasetError(name, "not a regular file")
    if path.stat().st_size == 0:
        raise DatasetError(name, "the file is empty; expected a JSON array, JSONL or CSV of records")


def sniff_encoding(path: Path, name: str | None = None) -> str:
    """The codec for `path`: from its byte-order mark, else UTF-8; DatasetError for binary data.

    Why sniff: opening a UTF-16 or binary file as UTF-8 fails mid-read with a UnicodeDecodeError
    traceback. A NUL byte never occurs in UTF-8 text, so one in the head means binary (or UTF-16
    without a mark, which cannot be told from binary reliably).
    """
    with path.open("rb") as fh:
        head = fh.read(_SNIFF_BYTES)
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return encoding
    if b"\x00" in head:
        raise DatasetError(name or str(path), NOT_TEXT)
    return "utf-8"


@contextmanager
def open_text(path: Path, name: str | None = None, newline: str | None = None) -> Iterator[IO[str]]:
    """Open a dataset as text in its sniffed encoding; a decoding failure anywhere in the file
    becomes one DatasetError instead of a traceback."""
    name = name or str(path)
    check_file(path, name)
    encoding = sniff_encoding(path, name)
    try:
        with path.open("r", encoding=encoding, newline=newline) as fh:
            yield fh
    except UnicodeError:
        raise DatasetError(name, NOT_TEXT) from None


def detect_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix in (".csv", ".tsv"):
        return "csv"
    with open_text(path) as fh:
        head = fh.read(_SNIFF_BYTES).lstrip()
    return "json" if head.startswith("[") else "jsonl"


def iter_raw(path: Path, fmt: str | None = None, display: str | None = None) -> Iterator[RawRecord]:
    """Yield raw records with their source position; never raises on a bad line.

    Raises DatasetError when the file as a whole is unusable: missing, a directory, empty,
    not text, or one pretty-printed JSON object instead of records.
    """
    name = display or str(path)
    check_file(path, name)
    fmt = fmt or detect_format(path)
    if fmt == "jsonl":
        yield from _iter_jsonl(path, name)
    elif fmt == "csv":
        yield from _iter_csv(path, name)
    elif fmt == "json":
        yield from _iter_json_array(path, name)
    else:
        raise ValueError(f"unknown format {fmt!r}")


def _iter_jsonl(path: Path, name: str) -> Iterator[RawRecord]:
    first = True
    with open_text(path, name) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            src = SourceRef(file=name, line=lineno)
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                if first and _is_whole_json_array(path, name):
                    yield from _iter_json_array(path, name)
                    return
                first = False
                yield RawRecord(None, src, "invalid JSON")
                continue
            first = False
            if not isinstance(data, dict):
                yield RawRecord(None, src, f"expected a JSON object, got {type(data).__name__}")
                continue
            yield RawRecord(data, src)


def _is_whole_json_array(path: Path, name: str) -> bool:
    """Called when the first JSONL line does not parse: is the file one pretty-printed value?

    Why: a pretty-printed object spreads over many lines and would be reported as "invalid JSON"
    on every one of them, hiding the real mistake (the file is one object, not a list of
    records); that is a DatasetError. A pretty-printed array is a dataset, just misnamed: True.
    Anything that does not parse whole is a file of broken lines, reported one by one: False.
    """
    with open_text(path, name) as fh:
        try:
            value = json.load(fh)
        except json.JSONDecodeError:
            return False
    if isinstance(value, list):
        return True
    kind = "a single JSON object" if isinstance(value, dict) else f"a JSON {type(value).__name__}"
    raise DatasetError(
        name, f"expected a JSON array of records or JSONL (one object per line), got {kind}"
    )


def _iter_json_array(path: Path, name: str) -> Iterator[RawRecord]:
    # A JSON array has to be parsed whole; JSONL is the format for datasets that must stream.
    try:
        with open_text(path, name) as fh:
            items = json.load(fh)
    except json.JSONDecodeError as exc:
        yield RawRecord(None, SourceRef(file=name, line=exc.lineno), f"invalid JSON ({exc.msg})")
        return
    if not isinstance(items, list):
        yield RawRecord(None, SourceRef(file=name), "expected a JSON array of records")
        return
    if not items:
        raise DatasetError(name, "the JSON array is empty; there are no records")
    for index, data in enumerate(items):
        src = SourceRef(file=name, index=index)
        if not isinstance(data, dict):
            yield RawRecord(None, src, f"expected a JSON object, got {type(data).__name__}")
            continue
        yield RawRecord(data, src)


def _iter_csv(path: Path, name: str) -> Iterator[RawRecord]:
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    with open_text(path, name, newline="") as fh:
        reader = csv.DictReader(fh, delimiter=delimiter)
        for row in reader:
            # line_num is the last physical line read, so multi-line cells still point at the row end.
            src = SourceRef(file=name, line=reader.line_num)
            if None in row:
                yield RawRecord(None, src, "more cells than header columns")
                continue
            yield RawRecord({k: _csv_cell(v) for k, v in row.items() if k}, src)


def _csv_cell(value: str | None) -> Any:
    """CSV cells are strings; node blocks and context lists arrive as JSON inside a cell."""
    if value is None or value == "":
        return None
    stripped = value.strip()
    if stripped[:1] in "[{":
        try:
            return json.loads(stripped)
        except json.JSONDecodeError:
            return value
    return value


# ---------------------------------------------------------------- normalisation

def _lookup(record: Mapping[str, Any], logical: str, field_map: Mapping[str, str],
            lowered: Mapping[str, str] | None = None) -> tuple[str | None, Any]:
    """Find a logical field's (key, value) in a record: --field mapping first, then aliases.
    `lowered` is `_lowered(record)`, passed by a caller that looks up many fields in one record
    (normalise: a dozen per record, and the map was most of its time)."""
    if lowered is None:
        lowered = _lowered(record)
    candidates = [field_map[logical]] if logical in field_map else []
    candidates += list(ALIASES.get(logical, (logical,)))
    for cand in candidates:
        key = cand if cand in record else lowered.get(cand.lower())
        if key is not None and record[key] is not None:
            return key, record[key]
    return None, None


def _lowered(record: Mapping[str, Any]) -> dict[str, str]:
    return {k.lower(): k for k in record}


def _join_context(value: Any) -> str:
    parts: list[str] = []
    for item in value:
        if isinstance(item, Mapping):
            item = next((item[k] for k in ("text", "page_content", "content") if k in item), item)
        parts.append(item if isinstance(item, str) else json.dumps(item, ensure_ascii=False))
    return _CONTEXT_JOIN.join(p for p in parts if p.strip())


def _format_validation(block: str, exc: ValidationError) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in (block, *err["loc"]))
        kind = err["type"]
        if kind in ("literal_error", "enum"):  # enum: ScoringMode
            expected = str(err.get("ctx", {}).get("expected", "")).replace("'", "").replace(" or ", ", ")
            msg = f"{err['input']!r} is not one of {expected}"
        elif kind == "extra_forbidden":
            msg = "unknown key"
        elif kind == "missing":
            msg = "required"
        else:
            msg = err["msg"].removeprefix("Value error, ")
        out.append((loc, msg))
    return out


def stable_case_id(fields: Mapping[str, Any]) -> str:
    """A missing case_id becomes a hash of the evaluated texts: same texts, same id, same cache.

    Callers pass only the texts (output, input, context, reference), not the node blocks: the
    same answer scored under two configurations must keep one id, or `compare` of the two runs
    would list it as present in one run only.
    """
    blob = json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str)
    return "case-" + hashlib.sha256(blob.encode()).hexdigest()[:12]


def normalise(
    raw: RawRecord, field_map: Mapping[str, str] | None = None, *, blocks: BlockModels
) -> Case | list[RecordError]:
    """One raw record into a Case, or every problem found in it. `blocks` is the graph's block
    registry: each block the record carries is validated by its node's model."""
    if raw.data is None:
        return [RecordError(raw.source, None, raw.error or "unreadable record")]
    record, fmap = raw.data, field_map or {}
    broken = [RecordError(raw.source, path, msg) for path, msg in lone_surrogates(record)]
    if broken:
        return broken
    errors: list[RecordError] = []
    used: set[str] = set()
    fields: dict[str, Any] = {}
    found_blocks: dict[str, Any] = {}

    output_bad = False
    lowered = _lowered(record)
    for logical in ("output", "input", "context", "reference"):
        key, value = _lookup(record, logical, fmap, lowered)
        if key is None:
            continue
        used.add(key)
        if logical == "context" and isinstance(value, list):
            value = _join_context(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and logical != "output":
            value = str(value)
        if not isinstance(value, str):
            errors.append(RecordError(raw.source, key, f"must be text, got {type(value).__name__}"))
            output_bad = output_bad or logical == "output"
            continue
        fields[logical] = value

    if not (fields.get("output") or "").strip() and not output_bad:
        names = ", ".join(([fmap["output"]] if "output" in fmap else []) + list(ALIASES["output"]))
        errors.append(RecordError(raw.source, "output", f"missing or empty (looked for: {names})"))

    for block, model in blocks.items():
        key, value = _lookup(record, block, fmap, lowered)
        if key is None:
            continue
        used.add(key)
        if not isinstance(value, Mapping):
            errors.append(RecordError(raw.source, block, f"must be an object, got {type(value).__name__}"))
            continue
        try:
            found_blocks[block] = model.model_validate(dict(value))
        except ValidationError as exc:
            errors.extend(RecordError(raw.source, loc, msg) for loc, msg in _format_validation(block, exc))

    id_key, case_id = _lookup(record, "case_id", fmap, lowered)
    if id_key is not None:
        used.add(id_key)
        if isinstance(case_id, bool) or not isinstance(case_id, (str, int)) or not str(case_id).strip():
            errors.append(RecordError(raw.source, id_key, "must be a non-empty string or integer"))
    if errors:
        return errors
    extra = {k: v for k, v in record.items() if k not in used}
    texts = {k: fields[k] for k in TEXT_FIELDS if k in fields}
    return Case(
        # unknown fields are ignored for identity too: same evaluated content, same id
        case_id=str(case_id).strip() if id_key is not None else stable_case_id(texts),
        blocks=found_blocks,
        extra=extra,
        source=raw.source,
        **fields,
    )


def has_own_id(raw: RawRecord, field_map: Mapping[str, str] | None = None) -> bool:
    """Whether the record names its case_id (else normalise generated one from its texts)."""
    return raw.data is not None and _lookup(raw.data, "case_id", field_map or {})[0] is not None


def mapped_columns_found(record: Mapping[str, Any], field_map: Mapping[str, str]) -> set[str]:
    """The `--field` columns (matched case-insensitively, like aliases) present in a record."""
    keys = {k.lower() for k in record}
    return {column for column in field_map.values() if column.lower() in keys}


def content_digest(case: Case, block_keys: Iterable[str] = ()) -> str:
    """Digest of what is evaluated, used to tell exact duplicates from conflicting ids.

    Unknown fields are left out: they never affect a score, so they never make a conflict.
    Every key of the registry (`block_keys`) is in the digested document, None when the record
    has no such block: the same document, so the same digest, as when each block was a field of
    the case.
    """
    dump = case.model_dump(exclude={"source", "extra", "blocks"})
    dump.update(dict.fromkeys(block_keys))
    dump.update({k: b.model_dump() for k, b in case.blocks.items()})
    return hashlib.sha256(json.dumps(dump, sort_keys=True, default=str).encode()).hexdigest()


# ---------------------------------------------------------------- datasets

def spool_stdin(dest_dir: Path) -> Path:
    """`--input -` reads JSONL from stdin; it is spooled so the file can be validated then run."""
    dest = dest_dir / "stdin.jsonl"
    with dest.open("w", encoding="utf-8") as fh:
        for line in sys.stdin:
            fh.write(line)
    return dest
