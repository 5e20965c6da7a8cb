"""The run summary: what the runner writes to summary.json and what every reader (the run
service, report.html, compare, gate) loads back.

Why one model: the summary used to be built as a dict and read back by string keys in some
thirty places, each with its own `.get(` chain and its own idea of what may be missing. Here
the shape is written down once, as CaseReport does for a case.

The layout is a compatibility surface (nexa-gauge's users read it; scripts and dashboards
look there first), so the bytes must not move: fields are declared in the order the file
holds them, and a key is written exactly when the writer set it (`exclude_unset`), not when
its value is non-null. That is what keeps legitimate nulls (`config`, `judge`,
`first_error`) on disk while keys that only some runs have (`headlines`, `prompt_templates`,
a judged node's `deduplicated`, a judge server's `endpoint`) stay absent elsewhere.

Reading tolerates the summaries of older runs (compare and gate read folders written by
earlier versions, and hand-made ones): every key may be missing; a count or time the file
does not have reads as None (unknown, shown as "-"), never as a made-up zero, and a missing
list or map reads as empty. A key that is present must have its documented type: a
malformed file is refused with one line naming the file and the field.
"""

from __future__ import annotations

import json
import os
import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from nexagauge_local.redteam.outcomes.tables import ProbeHeadline

__all__ = [
    "CaseCounts",
    "ConfigRef",
    "CostTotals",
    "DuplicateRecord",
    "EmbedderInfo",
    "EndpointInfo",
    "JudgeInfo",
    "JudgeOutcome",
    "NodeUsageSummary",
    "RunSummary",
    "SkippedRecord",
    "SummaryFileError",
    "read_summary",
]

_FIXED = ConfigDict(extra="forbid")


class CaseCounts(BaseModel):
    """`cases`: how many records were read, run, refused and repeated."""

    model_config = _FIXED

    records: int | None = None
    valid: int | None = None
    skipped: int | None = None
    duplicates: int | None = None


class ConfigRef(BaseModel):
    """`config`: the run configuration (--config) the records were read with."""

    model_config = _FIXED

    path: str
    sha256: str


class SkippedRecord(BaseModel):
    """One record of `skipped` (--on-error skip): where it is and why it was refused."""

    model_config = _FIXED

    file: str
    line: int | None = None
    index: int | None = None
    field: str | None = None
    reason: str


class DuplicateRecord(BaseModel):
    """One record of `duplicates`: an exact repeat, run once."""

    model_config = _FIXED

    case_id: str
    at: str
    first_seen: str


class EndpointInfo(BaseModel):
    """`judge.endpoint`: the judge server (never its API key)."""

    model_config = _FIXED

    url: str
    served_model: str
    root: str | None = None  # the weights the server says it serves (GET /models)
    max_model_len: int | None = None  # the window it reports
    revision: str | None = None
    concurrency: int
    server_gpus: int | None = None
    device_seconds: str


class JudgeInfo(BaseModel):
    """A judge's description (`judge`, and each entry of `node_judges`).

    Extra keys are allowed: the block is each judge's own `describe()` (a judge server, a
    cluster, a recording judge of `estimate`, a test's fake add or leave out keys), under the
    run's `profile`. Runs written before `prompt_versions` moved to the top level kept them
    here."""

    model_config = ConfigDict(extra="allow")

    profile: str | None = None
    model: str | None = None
    fingerprint: str | None = None
    demo: bool | None = None
    backend: str | None = None
    backend_reason: str | None = None
    batch_invariant: bool | None = None
    loaded: bool | None = None
    gpus: int | None = None
    device: str | None = None
    load_seconds: float | None = None
    endpoint: EndpointInfo | None = None
    notice: str | None = None
    # the cluster executor's own report (cluster/stats.py), a free-form block of its own
    cluster: dict[str, JsonValue] | None = None
    prompt_versions: dict[str, str] | None = None


class EmbedderInfo(BaseModel):
    """`embedder`: which embedding model, at what precision, and how much it encoded."""

    model_config = _FIXED

    model: str
    dtype: str
    encoded: int | None = None
    cache_hits: int | None = None


class JudgeOutcome(BaseModel):
    """One node of `judge_outcomes`: how its judge requests ended."""

    model_config = _FIXED

    requests: int
    failed: int
    first_error: str | None = None
    over_context: int | None = None  # only when some request was refused for its length
    truncated: int | None = None  # only when some was judged with its middle cut

    @property
    def all_failed(self) -> bool:
        return self.requests > 0 and self.failed == self.requests


class NodeUsageSummary(BaseModel):
    """One node of `nodes`: its eligible cases, the judge's counters and its wall time.

    The counters are judge.NodeUsage's; deduplicated, backend_requests, errors and
    cache_retried appear only for a node the judge served. gpu_seconds is null when a judge
    server's GPUs are unknown."""

    model_config = _FIXED

    eligible: int | None = None
    requests: int | None = None
    cache_hits: int | None = None
    backend_calls: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    gpu_seconds: float | None = None
    cache_retried: int | None = None  # cached answers that had failed, asked again
    deduplicated: int | None = None
    backend_requests: int | None = None
    errors: int | None = None
    wall_seconds: float | None = None


class CostTotals(BaseModel):
    """`cost`: the run's totals of the usage counters and its price in USD (0.0 without a
    GPU-hour price; null when device time is unknown)."""

    model_config = _FIXED

    requests: int | None = None
    cache_hits: int | None = None
    backend_calls: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    gpu_seconds: float | None = None
    cost: float | None = None


class RunSummary(BaseModel):
    """summary.json. Build it with every field the run knows; write it with `to_json`."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    tool: str = "nexagauge-local"
    versions: dict[str, str | None] = Field(default_factory=dict)
    target: str | None = None
    input: str | None = None
    config: ConfigRef | None = None
    started: str | None = None
    wall_seconds: float | None = None
    cases: CaseCounts = Field(default_factory=CaseCounts)
    skipped: list[SkippedRecord] = Field(default_factory=list)
    duplicates: list[DuplicateRecord] = Field(default_factory=list)
    nodes_run: list[str] = Field(default_factory=list)
    nodes_unavailable: list[str] = Field(default_factory=list)
    judge: JudgeInfo | None = None
    node_judges: dict[str, JudgeInfo] = Field(default_factory=dict)
    embedder: EmbedderInfo | None = None
    prompt_versions: dict[str, str] | None = None  # None: the run did not record them
    judge_outcomes: dict[str, JudgeOutcome] = Field(default_factory=dict)
    gpus: list[int] = Field(default_factory=list)
    gpu_hour_price: float | None = None
    nodes: dict[str, NodeUsageSummary] = Field(default_factory=dict)
    cost: CostTotals = Field(default_factory=CostTotals)
    # node -> the headline numbers of its finalize(): redteam's probe-outcome rates as the
    # model that names them; a headline of another shape (another node's, an older run's) is
    # kept as the node wrote it
    headlines: dict[str, Annotated[ProbeHeadline | dict[str, JsonValue],
                                   Field(union_mode="left_to_right")]] | None = None
    prompt_templates: dict[str, str] | None = None  # node -> sha256 (audited runs)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object summary.json holds: the keys the writer set, in file order."""
        return self.model_dump(mode="json", exclude_unset=True)

    def recorded_prompt_versions(self) -> dict[str, str] | None:
        """Prompt template version per node; None when the run did not record them (older
        runs kept them in the judge block)."""
        if self.prompt_versions is not None:
            return self.prompt_versions
        return self.judge.prompt_versions if self.judge is not None else None

    def node_fingerprints(self) -> dict[str, str | None]:
        """LLM node -> the fingerprint of the judge that judged it ({} for a run written
        before per-node judges)."""
        return {node: judge.fingerprint for node, judge in self.node_judges.items()}

    @classmethod
    def from_json(cls, text: str | bytes) -> RunSummary:
        """Raises ValidationError (a ValueError) when the text is not a run summary."""
        return cls.model_validate_json(text)


class SummaryFileError(ValueError):
    """A summary.json that cannot be read; the message names the file and what is wrong."""


_JSON_AT = re.compile(r"^(?P<what>.*?) at line (?P<line>\d+) column (?P<col>\d+)$")


def _line_of(text: str, loc: tuple[int | str, ...]) -> int:
    """The line of the deepest key of `loc` found in the file, each searched after its
    parent's (1 when none is). Hand-written because JSON parsers keep no positions; the
    runner writes one key a line, so the key's line is the field's."""
    pos = 0
    for part in loc:
        if not isinstance(part, str):
            continue
        found = re.compile(re.escape(json.dumps(part, ensure_ascii=False)) + r"\s*:").search(
            text, pos)
        if found is None:
            break
        pos = found.start()
    return text.count("\n", 0, pos) + 1


def invalid_because(exc: ValidationError, text: str) -> str:
    """The first thing wrong with a summary, as `LINE: what`: what a reader that refuses a
    summary.json says after the file's name."""
    first = exc.errors()[0]
    if first["type"] == "json_invalid":
        error = str(first.get("ctx", {}).get("error", first["msg"]))
        at = _JSON_AT.match(error)
        if at is None:
            return f"1: not valid JSON: {error}"
        return f"{at['line']}: not valid JSON: {at['what']} (column {at['col']})"
    loc = first["loc"]
    if not loc:
        return "1: must be a JSON object"
    return f"{_line_of(text, loc)}: field {'.'.join(str(p) for p in loc)}: {first['msg']}"


def read_summary(path: str | os.PathLike[str]) -> RunSummary:
    """summary.json at `path`. Raises SummaryFileError naming the file, the line and the
    field (FileNotFoundError when there is none, so a caller can say what a missing summary
    means to it)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise SummaryFileError(f"{os.fspath(path)}: cannot read: {exc.strerror}") from None
    try:
        return RunSummary.from_json(data)
    except ValidationError as exc:
        text = data.decode("utf-8", errors="replace")
        raise SummaryFileError(f"{os.fspath(path)}:{invalid_because(exc, text)}") from None
