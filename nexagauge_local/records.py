"""Records into typed cases: aliases, `--field` mappings (nested paths too), chat transcripts,
node blocks and ids, with messages that name the spot.

Every problem is reported as `file:line: field: message` (or `file[row]` for JSON arrays,
tables and in-memory rows) so a user can fix a 100k-line file without guessing. Reading the
formats is readers/' job; the names it exports are re-exported here for the callers that have
always imported them from this module.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from nexagauge_local.blocks import BlockModels
from nexagauge_local.case import TEXT_FIELDS, Case
from nexagauge_local.chat import CHAT_KEYS, chat_texts
from nexagauge_local.lone_surrogates import lone_surrogates
from nexagauge_local.readers import (  # noqa: F401  (re-exported)
    NOT_TEXT,
    DatasetError,
    RawRecord,
    RecordError,
    RecordsError,
    check_file,
    detect_format,
    iter_raw,
    open_text,
    sniff_encoding,
)

# Canonical field -> accepted aliases, in priority order (docs/data-formats.md: this
# project's names, plus the ragas and deepeval names so their datasets load unchanged). Keys are
# matched case-insensitively.
ALIASES: dict[str, tuple[str, ...]] = {
    "case_id": ("case_id", "id"),
    "output": ("output", "generation", "response", "answer", "completion", "actual_output"),
    "input": ("input", "question", "query", "prompt", "user_input"),
    "context": ("context", "contexts", "documents", "retrieval_context", "retrieved_contexts"),
    "reference": ("reference", "ground_truth", "gold_answer", "label", "expected_output"),
}

# The logical field a chat transcript is read from (chat.py maps it to input/output/context).
MESSAGES = "messages"


def logical_fields(blocks: BlockModels) -> tuple[str, ...]:
    """Every name `--field LOGICAL=COLUMN` accepts: the text fields, a chat transcript's
    `messages`, and the node blocks."""
    return (*ALIASES, MESSAGES, *blocks)


_CONTEXT_JOIN = "\n\n"


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


# ---------------------------------------------------------------- normalisation

def _lookup(record: Mapping[str, Any], logical: str, field_map: Mapping[str, str],
            lowered: Mapping[str, str] | None = None) -> tuple[str | None, Any]:
    """Find a logical field's (key, value) in a record: --field mapping first, then aliases.
    `lowered` is `_lowered(record)`, passed by a caller that looks up many fields in one record
    (normalise: a dozen per record, and the map was most of its time). A mapped column may be
    a dotted path into nested objects and lists (`response.text`, `choices.0.message.content`);
    its key is then the path, which is how messages name it."""
    if lowered is None:
        lowered = _lowered(record)
    if logical in field_map:
        key, value = resolve_column(record, field_map[logical], lowered)
        if key is not None and value is not None:
            return key, value
    aliases = CHAT_KEYS if logical == MESSAGES else ALIASES.get(logical, (logical,))
    for cand in aliases:
        key = cand if cand in record else lowered.get(cand.lower())
        if key is not None and record[key] is not None:
            return key, record[key]
    return None, None


def resolve_column(record: Mapping[str, Any], column: str,
                   lowered: Mapping[str, str] | None = None) -> tuple[str | None, Any]:
    """(key, value) of a `--field` column: a key of the record (any case, dots and all), else
    a dotted path whose steps are keys (any case) or list positions, whose key is the path as
    given; (None, None) when the record has no such column.

    Why a column name with dots is tried whole first: CSV headers and flattened Parquet
    columns are often named `response.text`; such a column is what the user means.
    """
    lowered = _lowered(record) if lowered is None else lowered
    key = column if column in record else lowered.get(column.lower())
    if key is not None:
        return key, record[key]
    if "." not in column:
        return None, None
    value: Any = record
    for step in column.split("."):
        if isinstance(value, Mapping):
            match = step if step in value else _lowered(value).get(step.lower())
            if match is None:
                return None, None
            value = value[match]
        elif isinstance(value, list) and step.lstrip("-").isdigit() and \
                -len(value) <= int(step) < len(value):
            value = value[int(step)]
        else:
            return None, None
    return column, value


def _lowered(record: Mapping[str, Any]) -> dict[str, str]:
    return {str(k).lower(): k for k in record}


def _join_context(value: Any) -> str:
    parts: list[str] = []
    for item in value:
        if isinstance(item, Mapping):
            item = next((item[k] for k in ("text", "page_content", "content") if k in item), item)
        parts.append(item if isinstance(item, str) else json.dumps(item, ensure_ascii=False))
    return _CONTEXT_JOIN.join(p for p in parts if p.strip())


def format_validation(block: str, exc: ValidationError) -> list[tuple[str, str]]:
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

    bad: set[str] = set()  # text fields present but not text (reported already)
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
            bad.add(logical)
            continue
        fields[logical] = value

    chat_key = _fill_from_chat(record, fmap, lowered, fields, bad, raw, errors)
    if chat_key is not None:
        used.add(chat_key)
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
            errors.extend(RecordError(raw.source, loc, msg) for loc, msg in format_validation(block, exc))

    if not (fields.get("output") or "").strip() and "output" not in bad:
        if any(getattr(type(b), "blank_output_is_outcome", False) for b in found_blocks.values()):
            fields["output"] = fields.get("output") or ""  # counted by its node, not dropped
        else:
            names = ", ".join(([fmap["output"]] if "output" in fmap else [])
                              + list(ALIASES["output"]))
            if chat_key is not None:
                names += f", and an assistant turn in {chat_key}"
            errors.append(RecordError(raw.source, "output",
                                      f"missing or empty (looked for: {names})"))

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


def _fill_from_chat(record: Mapping[str, Any], fmap: Mapping[str, str],
                    lowered: Mapping[str, str], fields: dict[str, Any], bad: set[str],
                    raw: RawRecord, errors: list[RecordError]) -> str | None:
    """Fill the text fields the record lacks (or has blank) from its chat transcript (chat.py),
    if it has one; the transcript's key, or None when it was not read."""
    wanted = [f for f in ("output", "input", "context")
              if not (fields.get(f) or "").strip() and f not in bad]
    if not wanted:
        return None
    key, messages = _lookup(record, MESSAGES, fmap, lowered)
    if key is None:
        return None
    chat = chat_texts(messages, key)
    errors.extend(RecordError(raw.source, path, msg) for path, msg in chat.errors)
    if chat.errors:
        bad.add("output")  # the transcript's problem is the record's; no second "missing"
    for logical in wanted:
        value = getattr(chat, logical)
        if value is not None:
            fields[logical] = value
    return key


def has_own_id(raw: RawRecord, field_map: Mapping[str, str] | None = None) -> bool:
    """Whether the record names its case_id (else normalise generated one from its texts)."""
    return raw.data is not None and _lookup(raw.data, "case_id", field_map or {})[0] is not None


def mapped_columns_found(record: Mapping[str, Any], field_map: Mapping[str, str]) -> set[str]:
    """The `--field` columns (matched case-insensitively, like aliases; nested paths resolved)
    present in a record."""
    lowered = _lowered(record)
    return {column for column in field_map.values()
            if resolve_column(record, column, lowered)[0] is not None}


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
