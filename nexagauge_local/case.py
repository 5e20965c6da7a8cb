"""The typed evaluation case every node works on."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from nexagauge_local.blocks import (
    GevalBlock,
    GroundingBlock,
    ProbeBlock,
    RedteamBlock,
    RefalignBlock,
    RelevanceBlock,
)

TEXT_FIELDS = ("output", "input", "context", "reference")


class SourceRef(BaseModel):
    """Where a record came from, so every message can name file and line (or array index)."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int | None = None
    index: int | None = None

    def __str__(self) -> str:
        if self.line is not None:
            return f"{self.file}:{self.line}"
        if self.index is not None:
            return f"{self.file}[{self.index}]"
        return self.file


class Case(BaseModel):
    model_config = ConfigDict(frozen=True)

    case_id: str
    output: str
    input: str | None = None
    context: str | None = None
    reference: str | None = None
    geval: GevalBlock | None = None
    grounding: GroundingBlock | None = None
    relevance: RelevanceBlock | None = None
    redteam: RedteamBlock | None = None
    refalign: RefalignBlock | None = None
    probe: ProbeBlock | None = None
    extra: dict[str, Any] = Field(default_factory=dict, description="unknown fields, kept as is")
    source: SourceRef | None = None

    def field(self, name: str) -> str | None:
        """A text field by canonical name, None when absent or blank."""
        value = getattr(self, name)
        return value if isinstance(value, str) and value.strip() else None

    def input_view(self) -> dict[str, str | None]:
        """The `input` section of a case report."""
        return {"case_id": self.case_id, **{f: getattr(self, f) for f in TEXT_FIELDS}}

    # Blocks resolve to their defaults when omitted (data-schema.md: conservative defaults).
    def grounding_cfg(self) -> GroundingBlock:
        return self.grounding or GroundingBlock()

    def relevance_cfg(self) -> RelevanceBlock:
        return self.relevance or RelevanceBlock()

    def redteam_cfg(self) -> RedteamBlock:
        return self.redteam or RedteamBlock()

    def refalign_cfg(self) -> RefalignBlock:
        return self.refalign or RefalignBlock()
