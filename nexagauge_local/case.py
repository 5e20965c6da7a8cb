"""The typed evaluation case every node works on.

Node blocks are held by record key (`blocks`), not as one typed field per node: the models are
owned by the nodes (a layer above), and a new node's block must not need an edit here. A node
reads its block typed with `case.block_of(key, Model)` (None when the record has none) or
`case.settings(key, Model)` (the model's defaults when the record omits the block).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny

B = TypeVar("B", bound=BaseModel)

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
    # record key -> its validated block, only the blocks the record carries
    blocks: dict[str, SerializeAsAny[BaseModel]] = Field(default_factory=dict)
    extra: dict[str, Any] = Field(default_factory=dict, description="unknown fields, kept as is")
    source: SourceRef | None = None

    def field(self, name: str) -> str | None:
        """A text field by canonical name, None when absent or blank."""
        value = getattr(self, name)
        return value if isinstance(value, str) and value.strip() else None

    def input_view(self) -> dict[str, str | None]:
        """The `input` section of a case report."""
        return {"case_id": self.case_id, **{f: getattr(self, f) for f in TEXT_FIELDS}}

    def block(self, key: str) -> BaseModel | None:
        """The record's `key` block, None when the record has none."""
        return self.blocks.get(key)

    def block_of(self, key: str, model: type[B]) -> B | None:
        """The record's `key` block as `model`, None when the record has none."""
        found = self.blocks.get(key)
        if found is None:
            return None
        if not isinstance(found, model):
            raise TypeError(f"block {key!r} is a {type(found).__name__}, not a {model.__name__}")
        return found

    def settings(self, key: str, model: type[B]) -> B:
        """The record's `key` block, or `model`'s defaults when omitted (a record without a
        block gets the block's conservative defaults: docs/data-formats.md "The record format")."""
        found = self.block_of(key, model)
        return found if found is not None else model()
