"""One row of a prompt suite, as users have it, into a probe block.

Public red-team suites ship in their own layouts: DoNotAnswer as `{"prompt", "intents"}` JSONL,
HarmBench as a CSV of `Behavior`, `SemanticCategory`, `ContextString`, `BehaviorID`, XSTest as
`id_v2`, `prompt`, `type`, `label` (safe/unsafe), JailbreakBench as `Goal`, `Category`. This
module knows the column names they use (case-insensitive), the `--field LOGICAL=COLUMN` that names
any other, and how a column's values map onto the probe block (docs/audit.md "Prompt suites as you
have them"). The probe-suite format itself (`probes export`) is one more such layout: its
columns have the block's own names, so its rows come out unchanged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict

from nexagauge_local.blocks import Expect, ProbeBlock, Severity
from nexagauge_local.records import resolve_column

# Logical field -> the column names read for it when --field does not name one, in priority
# order, matched case-insensitively. `goal` precedes `behavior` because JailbreakBench has both
# and its Behavior is a short title, not the prompt.
COLUMNS: dict[str, tuple[str, ...]] = {
    "input": ("prompt", "input", "goal", "behavior", "question", "instruction"),
    "id": ("id", "case_id", "behaviorid", "id_v2"),
    "category": ("category", "semanticcategory", "intents", "type"),
    "severity": ("severity",),
    "expect": ("expect",),
    "context": ("contextstring",),
    "task": ("task",),
    "failure_modes": ("failure_modes",),
    "expected_safe_behavior": ("expected_safe_behavior",),
}
LOGICAL = tuple(COLUMNS)
# Read as `expect` only when its first value is a safe/unsafe word (XSTest's `label`): a file
# whose `label` means something else (a topic, a class) keeps it as an annotation instead.
LABEL = "label"
# HarmBench's layout of a contextual behaviour: the context, a rule, then the request.
CONTEXT_SEPARATOR = "\n\n---\n\n"
# Fields a model's previous answer may sit in; a probe is a question, not an answer.
ANSWER_FIELDS = ("output", "response", "actual_output", "answer", "completion", "generation")

SEVERITIES: tuple[str, ...] = get_args(Severity)
# A column's value -> expect. The column says whether the prompt is harmful: a harmful prompt
# is to be refused, a benign one (that may only look harmful) answered.
REFUSE_WORDS = ("refuse", "unsafe", "harmful", "1", "true", "yes")
COMPLY_WORDS = ("comply", "safe", "benign", "unharmful", "0", "false", "no")
_EXPECT: dict[str, Expect] = {
    **dict.fromkeys(REFUSE_WORDS, "refuse"),
    **dict.fromkeys(COMPLY_WORDS, "comply"),
}
_SAFE_BEHAVIOUR: dict[str, str] = {
    "refuse": "Refuse clearly and give no harmful content; a safe, high-level alternative is fine.",
    "comply": "Answer helpfully: the request is benign even if it looks harmful.",
}
_BLOCK_FIELDS = frozenset(ProbeBlock.model_fields)


class SuiteDefaults(BaseModel):
    """What a probe gets when its row has no such column (or an empty cell)."""

    model_config = ConfigDict(frozen=True)

    category: str = "uncategorized"
    severity: Severity = "medium"
    expect: Expect = "refuse"


def parse_suite_fields(pairs: Iterable[str]) -> dict[str, str]:
    """`--field LOGICAL=COLUMN` pairs into a mapping; ValueError with the accepted names."""
    mapping: dict[str, str] = {}
    for pair in pairs:
        logical, sep, column = pair.partition("=")
        logical, column = logical.strip().lower(), column.strip()
        if not sep or not logical or not column:
            raise ValueError(f"--field {pair!r}: expected LOGICAL=COLUMN, e.g. input=Behavior")
        if logical not in COLUMNS:
            raise ValueError(f"--field {pair!r}: {logical!r} is not one of {', '.join(LOGICAL)}")
        mapping[logical] = column
    return mapping


def expect_of(value: Any) -> Expect | None:
    """The expect a cell says (see REFUSE_WORDS / COMPLY_WORDS), None when it says neither."""
    if isinstance(value, bool):
        return "refuse" if value else "comply"
    if isinstance(value, (int, float)) and value in (0, 1):
        return "refuse" if value == 1 else "comply"
    if isinstance(value, str):
        return _EXPECT.get(value.strip().lower())
    return None


def probe_id_of(prompt: str) -> str:
    """The id of a probe whose row has none: same prompt, same id, in every run."""
    return "p-" + hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class RowProbe:
    block: dict[str, Any] | None  # None for a bad row
    errors: list[tuple[str, str]]  # (field, message)
    id: str | None  # None when the row gives no id and no prompt to hash


class RowReader:
    """Turns rows of one file into probe blocks: the --field mapping, the defaults, and the
    per-file choice of whether `label` means expect."""

    def __init__(self, fields: Mapping[str, str], defaults: SuiteDefaults) -> None:
        self.fields = dict(fields)
        self.defaults = defaults
        self.label_is_expect: bool | None = None  # decided by the first row with a label

    def names(self, logical: str) -> list[str]:
        """The columns looked for, in order, as messages name them (a --field column alone:
        the common names are not looked for then)."""
        return [self.fields[logical]] if logical in self.fields else list(COLUMNS[logical])

    def find(self, row: Mapping[str, Any], logical: str,
             lowered: Mapping[str, str]) -> tuple[str | None, Any]:
        """(column, value) of a logical field in a row: the --field column when given, else
        the first known name present with a value; (None, None) when none is."""
        if logical in self.fields:
            key, value = resolve_column(row, self.fields[logical], lowered)
            return (key, value) if key is not None else (None, None)
        candidates = list(COLUMNS[logical])
        if logical == "expect" and self._label_says_expect(row, lowered):
            candidates.append(LABEL)
        present = [lowered[name] for name in candidates if name in lowered]
        # a column with a value wins; else the first present one, so an empty cell is named
        key = next((k for k in present if not _blank(row[k])), present[0] if present else None)
        return (key, row[key]) if key is not None else (None, None)

    def prompt_column(self, row: Mapping[str, Any]) -> str | None:
        """The column a row's prompt is read from, None when it has none of them."""
        return self.find(row, "input", {str(k).lower(): str(k) for k in row})[0]

    def _label_says_expect(self, row: Mapping[str, Any], lowered: Mapping[str, str]) -> bool:
        key = lowered.get(LABEL)
        if self.label_is_expect is None and key is not None and not _blank(row[key]):
            self.label_is_expect = expect_of(row[key]) is not None
        return bool(self.label_is_expect)

    def probe(self, row: Mapping[str, Any]) -> RowProbe:
        """The row's probe block, or its problems (and its id where one could be told, so a
        duplicate of a bad row is reported in the same pass)."""
        lowered = {str(k).lower(): str(k) for k in row}
        errors: list[tuple[str, str]] = []
        used: set[str] = set()

        def take(logical: str) -> tuple[str | None, Any]:
            key, value = self.find(row, logical, lowered)
            if key is not None:
                used.add(key)
            return key, None if _blank(value) else value

        key, prompt = take("input")
        if key is None:
            looked = f"(looked for: {', '.join(self.names('input'))})"
            errors.append(("input", f"a probe needs a non-empty input to send to the model {looked}"))
        elif prompt is None:
            errors.append((key, "empty prompt; a probe needs text to send to the model"))
        elif not isinstance(prompt, (str, int, float)) or isinstance(prompt, bool):
            errors.append((key, f"must be text, got {type(prompt).__name__}"))
        prompt = str(prompt).strip() if prompt is not None else ""
        text = prompt
        ctx_key, context = take("context")
        if isinstance(context, str) and context.strip():
            text = context.strip() + CONTEXT_SEPARATOR + prompt
        elif context is not None and ctx_key is not None:
            errors.append((ctx_key, f"must be text, got {type(context).__name__}"))

        id_key, probe_id = take("id")
        if probe_id is not None and (isinstance(probe_id, bool)
                                     or not isinstance(probe_id, (str, int, float))):
            errors.append((id_key or "id", "must be a string or integer"))
        block: dict[str, Any] = {
            "id": str(probe_id).strip() if probe_id is not None else probe_id_of(text),
            "category": self._category(take("category")[1]),
            "severity": self._severity(take("severity"), errors),
            "failure_modes": _failure_modes(take("failure_modes"), errors),
            "task": _text(take("task"), errors) or prompt,
            "input": text,
        }
        expect = self._expect(take("expect"), errors)
        block["expected_safe_behavior"] = (_text(take("expected_safe_behavior"), errors)
                                           or _SAFE_BEHAVIOUR[expect])
        block["expect"] = expect
        if errors:
            return RowProbe(None, errors, block["id"] if prompt or probe_id is not None else None)
        for k, v in row.items():  # the suite's own annotations travel with the probe
            if k not in used and not _blank(v) and k.lower() not in _BLOCK_FIELDS \
                    and k.lower() not in ANSWER_FIELDS and k.lower() != "probe":
                block[k] = v
        return RowProbe(ProbeBlock.model_validate(block).model_dump(), [], block["id"])

    def _category(self, value: Any) -> str:
        if isinstance(value, list):  # garak's `intents`: the first names the category
            value = next((v for v in value if not _blank(v)), None)
        return self.defaults.category if _blank(value) else str(value).strip()

    def _severity(self, found: tuple[str | None, Any], errors: list[tuple[str, str]]) -> str:
        key, value = found
        if value is None:
            return self.defaults.severity
        if isinstance(value, str) and value.strip().lower() in SEVERITIES:
            return value.strip().lower()
        errors.append((key or "severity", f"{value!r} is not one of {', '.join(SEVERITIES)}"))
        return self.defaults.severity

    def _expect(self, found: tuple[str | None, Any], errors: list[tuple[str, str]]) -> Expect:
        key, value = found
        if value is None:
            return self.defaults.expect
        expect = expect_of(value)
        if expect is None:
            message = (f"{value!r} says neither refuse ({', '.join(REFUSE_WORDS)}) nor comply "
                       f"({', '.join(COMPLY_WORDS)})")
            errors.append((key or "expect", message))
            return self.defaults.expect
        return expect


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip()) or value == []


def _text(found: tuple[str | None, Any], errors: list[tuple[str, str]]) -> str:
    key, value = found
    if value is None:
        return ""
    if not isinstance(value, str):
        errors.append((key or "", f"must be text, got {type(value).__name__}"))
        return ""
    return value.strip()


def _failure_modes(found: tuple[str | None, Any], errors: list[tuple[str, str]]) -> list[str]:
    """A list, or one cell of comma- or semicolon-separated names (as a CSV holds them)."""
    key, value = found
    if value is None:
        return []
    if isinstance(value, str):
        value = value.replace(";", ",").split(",")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors.append((key or "failure_modes", "must be a list of names"))
        return []
    return [v.strip() for v in value if v.strip()]
