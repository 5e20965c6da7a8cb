"""One case report: what the runner writes to case_report/<case>.json and what every reader
(report, export, agreement, compare, gate) loads back.

Why one model: the report used to be written from typed results but read back as dicts, each
reader digging with its own `.get(` chains and its own idea of which keys may be missing. Here
the shape is written down once.

The file is `{target_node, input, <node>: section ..., skipped?, input_truncated?}`: the node
sections sit at the top level under their node's name (docs/outputs.md "The output directory"), in
graph order, so `sections` collects them on reading and `to_dict` puts them back in place.
Sections stay dicts: their keys are the node's own (a metric node's `{metrics, cost, ...extras}`,
claims' status and claims, eval's verdict); `metrics_of` and `verdict_of` read the shapes shared
by several nodes. `to_dict` builds the written dict by hand rather than through pydantic's
serializer, so the bytes on disk are exactly the sections' own (no key added, dropped or
reordered; severity or reasoning absent stays absent).

Reading tolerates reports of older runs (compare and reproduce read old folders): unknown
top-level keys that are not objects are ignored, and every key may be missing (a reader that
needs the case id checks `case_id`, empty when the file has none).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from nexagauge_local.results import NodeReport

__all__ = ["CaseInput", "CaseReport", "ValidationError", "VerdictSection", "invalid_because"]

_OWN_KEYS = ("target_node", "input", "skipped", "input_truncated")


class CaseInput(BaseModel):
    """The case's evaluated texts (Case.input_view), in the order they are written."""

    model_config = ConfigDict(extra="allow")

    case_id: str = ""
    output: str | None = None
    input: str | None = None
    context: str | None = None
    reference: str | None = None

    def text(self, name: str) -> str | None:
        value = getattr(self, name, None)
        return None if value is None else str(value)


class VerdictSection(BaseModel):
    """The section of the node that aggregates the metric nodes (eval): the case's verdict.
    (nodes/eval.py's CaseVerdict is the artifact that writes it.)"""

    model_config = ConfigDict(extra="allow")

    passed: bool | None = None
    score: float | None = None
    nodes: list[str] = Field(default_factory=list)
    failed_metrics: list[str] = Field(default_factory=list)
    error_metrics: list[str] = Field(default_factory=list)
    scores: dict[str, float | None] = Field(default_factory=dict)


class CaseReport(BaseModel):
    """One case's report. Build it with `sections` in graph order; write it with `to_dict`."""

    target_node: str | None = None
    input: CaseInput = Field(default_factory=CaseInput)
    sections: dict[str, dict[str, Any]] = Field(default_factory=dict)
    skipped: dict[str, str] = Field(default_factory=dict)
    input_truncated: list[dict[str, Any]] = Field(default_factory=list)
    # node -> its parsed metric section: the rows, the drill-down and a case panel (claims
    # reads relevance and grounding) each ask, and a report is read, not changed
    _metrics: dict[str, NodeReport | None] = PrivateAttr(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _gather_sections(cls, data: Any) -> Any:
        """The file's top-level node keys -> `sections` (a dict given with `sections` already
        is a model being built, not a file being read)."""
        if not isinstance(data, Mapping) or "sections" in data:
            return data
        own = {k: data[k] for k in _OWN_KEYS if k in data}
        own["sections"] = {k: v for k, v in data.items()
                           if k not in _OWN_KEYS and isinstance(v, Mapping)}
        return own

    @property
    def case_id(self) -> str:
        return self.input.case_id

    def to_dict(self) -> dict[str, Any]:
        """The JSON object the case file holds: skipped and input_truncated only when there
        is something to say."""
        out: dict[str, Any] = {}
        if self.target_node is not None:
            out["target_node"] = self.target_node
        out["input"] = self.input.model_dump()
        out.update(self.sections)
        if self.skipped:
            out["skipped"] = self.skipped
        if self.input_truncated:
            out["input_truncated"] = self.input_truncated
        return out

    def section(self, node: str) -> dict[str, Any] | None:
        return self.sections.get(node)

    def metrics_of(self, node: str) -> NodeReport | None:
        """The node's `{metrics, cost}` section; None when the node wrote none (or wrote a
        section without a metrics list, like claims or eval)."""
        # the private dict itself: `self._metrics` goes through BaseModel.__getattr__, which
        # cost more than the parse it saves (the report digests every case of a run)
        parsed: dict[str, NodeReport | None] = self.__pydantic_private__["_metrics"]  # type: ignore[index]
        if node not in parsed:
            section = self.sections.get(node)
            parsed[node] = (NodeReport.from_section(section) if section is not None
                            and isinstance(section.get("metrics"), list) else None)
        return parsed[node]

    def metric_sections(self) -> Iterator[tuple[str, NodeReport]]:
        """Every section with a metrics list, in the order the report holds them."""
        for node in self.sections:
            report = self.metrics_of(node)
            if report is not None:
                yield node, report

    def verdict_of(self, node: str) -> VerdictSection | None:
        """The node's verdict section (eval's), None when it has none or it does not parse."""
        section = self.sections.get(node)
        if section is None or "passed" not in section:
            return None
        try:
            return VerdictSection.model_validate(section)
        except ValidationError:
            return None

    @classmethod
    def from_json(cls, text: str | bytes) -> CaseReport:
        """Raises ValidationError (a ValueError) when the text is not a case report."""
        return cls.model_validate_json(text)


def invalid_because(exc: ValidationError) -> str:
    """The first thing wrong with a case report, as `field.path: message`: what every reader
    that refuses a case-report file says after the file's name."""
    first = exc.errors()[0]
    return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
