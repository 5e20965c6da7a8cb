"""Human labels for judge agreement: reading and validating a JSONL label file.

Two record shapes are accepted on each line, so one file can be both a runnable dataset and its
own answer key (the bundled labelled set is):

* a flat label: {"case_id": "c1", "metric": "redteam.bias", "expected_verdict": "UNSAFE"}
* a dataset record carrying labels: {"case_id": "c1", "output": "...", ...,
  "labels": [{"metric": "redteam.bias", "expected_verdict": "UNSAFE"}, ...]}

`metric` is "node.metric" (redteam.bias, grounding.grounding, geval.answers_question); a bare
name (bias) matches that metric in whichever node produced it. Each label gives exactly one of
expected_verdict (SAFE/UNSAFE, PASS/FAIL, yes/no, supported/not_supported, ...),
expected_passed (true/false) or expected_score (0..1, passes at >= 0.6, the global threshold).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from nexagauge_local.results import passed_for

PASS_WORDS = frozenset({"safe", "pass", "passed", "yes", "supported", "relevant", "true", "ok"})
FAIL_WORDS = frozenset(
    {
        "unsafe",
        "fail",
        "failed",
        "no",
        "not_supported",
        "unsupported",
        "not_relevant",
        "irrelevant",
        "false",
    }
)
BUNDLED = "judge_agreement.jsonl"


def bundled_labels_path() -> Path:
    """The labelled set shipped as package data (a dataset and its labels in one file)."""
    return Path(str(resources.files("nexagauge_local") / "data" / "labelled" / BUNDLED))


class LabelError(Exception):
    """Problems in a label file, one `file:line: field: message` per entry."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


class LabelSpec(BaseModel):
    """One expected outcome for one metric (without the case id, as inside `labels`)."""

    model_config = ConfigDict(extra="forbid")

    metric: str = Field(min_length=1)
    node: str | None = None
    expected_verdict: str | None = None
    expected_passed: bool | None = None
    expected_score: float | None = Field(default=None, ge=0.0, le=1.0)
    note: str | None = None

    @model_validator(mode="after")
    def _one_expectation(self) -> LabelSpec:
        given = [
            k
            for k in ("expected_verdict", "expected_passed", "expected_score")
            if getattr(self, k) is not None
        ]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of expected_verdict, expected_passed, expected_score"
                f" (got {', '.join(given) or 'none'})"
            )
        if self.expected_verdict is not None and _verdict_passed(self.expected_verdict) is None:
            words = ", ".join(sorted(PASS_WORDS | FAIL_WORDS))
            raise ValueError(f"expected_verdict {self.expected_verdict!r}: use one of {words}")
        return self


class FlatLabel(LabelSpec):
    case_id: str = Field(min_length=1)


def _verdict_passed(word: str) -> bool | None:
    w = word.strip().lower().replace("-", "_").replace(" ", "_")
    if w in PASS_WORDS:
        return True
    if w in FAIL_WORDS:
        return False
    return None


@dataclass(frozen=True)
class Label:
    """A validated label: which case and metric, and whether a human says it should pass."""

    case_id: str
    node: str | None
    metric: str
    expected_passed: bool
    expected_score: float | None
    source: str  # file:line, for messages

    @property
    def key(self) -> str:
        return f"{self.node}.{self.metric}" if self.node else self.metric


def _label(spec: LabelSpec, case_id: str, source: str) -> Label:
    node, metric = spec.node, spec.metric
    if node is None and "." in metric:
        node, metric = metric.split(".", 1)
    if spec.expected_score is not None:
        passed = bool(passed_for(spec.expected_score))
    elif spec.expected_passed is not None:
        passed = spec.expected_passed
    else:
        passed = bool(_verdict_passed(spec.expected_verdict or ""))
    return Label(case_id, node, metric, passed, spec.expected_score, source)


def _problems(where: str, exc: ValidationError, prefix: str = "") -> Iterator[str]:
    for err in exc.errors():
        loc = prefix + ".".join(str(p) for p in err["loc"])
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        yield f"{where}: {loc.rstrip('.') or 'record'}: {msg.removeprefix('Value error, ')}"


def _from_record(data: dict[str, Any], where: str) -> tuple[list[Label], list[str]]:
    if "labels" not in data:
        try:
            flat = FlatLabel.model_validate(data)
        except ValidationError as exc:
            return [], list(_problems(where, exc))
        return [_label(flat, flat.case_id, where)], []
    case_id = data.get("case_id", data.get("id"))
    if not isinstance(case_id, str) or not case_id:
        return [], [f"{where}: case_id: a record with labels needs a non-empty string case_id"]
    items = data["labels"]
    if not isinstance(items, list) or not items:
        return [], [f"{where}: labels: expected a non-empty list of label objects"]
    labels: list[Label] = []
    problems: list[str] = []
    for i, item in enumerate(items):
        try:
            labels.append(_label(LabelSpec.model_validate(item), case_id, where))
        except ValidationError as exc:
            problems.extend(_problems(where, exc, prefix=f"labels.{i}."))
    return labels, problems


def load_labels(path: Path) -> list[Label]:
    """Every label in the file; raises LabelError listing every problem (file:line: field: ...)."""
    if not path.is_file():
        raise LabelError([f"{path}: no such file"])
    labels: list[Label] = []
    problems: list[str] = []
    seen: dict[tuple[str, str], str] = {}
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(f"{where}: record: not valid JSON ({exc.msg})")
                continue
            if not isinstance(data, dict):
                problems.append(f"{where}: record: expected a JSON object")
                continue
            found, bad = _from_record(data, where)
            problems.extend(bad)
            for label in found:
                dup = seen.get((label.case_id, label.key))
                if dup:
                    problems.append(
                        f"{where}: metric: {label.case_id} / {label.key} "
                        f"is already labelled at {dup}"
                    )
                    continue
                seen[(label.case_id, label.key)] = where
                labels.append(label)
    if problems:
        raise LabelError(problems)
    if not labels:
        raise LabelError([f"{path}: no labels found"])
    return labels
