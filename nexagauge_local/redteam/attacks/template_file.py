"""A user's own jailbreak templates, one strategy per template.

Why: the bundled templates measure techniques; an organisation also wants to know whether the
specific prompts circulating against it, or its own red team's, get through. Each template of
a corpus file (template_formats.py reads the formats) becomes a strategy named
``template:<name>`` that the audit runs like any other.

A template marks where the probe goes with a slot: ``{prompt}``, or the spellings other tools
use for the same thing (promptfoo's ``{{prompt}}``, garak's in-the-wild ``[INSERT PROMPT
HERE]`` and AutoDAN's ``[PROMPT]``). The probe is put in by splitting on the slots once when
the file is read, never with ``str.format``: templates are full of braces of their own, and a
probe's text must go in verbatim. garak's ``{generator.name}`` stands for the model's name; it
becomes a neutral name, since naming the model under test would tie a template to one target.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nexagauge_local.redteam.attacks.strategy import Disguise, user_turn
from nexagauge_local.redteam.attacks.template_formats import (
    RawTemplate,
    TemplateFileError,
    parse_file,
)

__all__ = (
    "NEUTRAL_MODEL_NAME",
    "FileTemplate",
    "TemplateFileError",
    "load_template_file",
    "load_template_files",
)

NEUTRAL_MODEL_NAME = "AI"
MODEL_NAME_SLOT = "{generator.name}"
PREFIX = "template:"
SLOTS = re.compile(r"\{\{\s*prompt\s*\}\}|\{prompt\}|\[INSERT PROMPT HERE\]|\[PROMPT\]")


@dataclass(frozen=True)
class FileTemplate:
    """One template of a user's file: the text around its slots, joined with the probe."""

    name: str
    pieces: tuple[str, ...]
    source: str
    family: str = field(default="template", init=False)

    @property
    def summary(self) -> str:
        return f"user template from {self.source}"

    def disguise(self, prompt: str, seed: int) -> list[Disguise]:
        """One user turn; the seed is unused."""
        return user_turn(prompt.join(self.pieces), template=self.name.removeprefix(PREFIX))

    def decode_answer(self, answer: str) -> str | None:
        return None


def slug(name: str) -> str:
    """A CLI-friendly name: lowercase, runs of anything but letters and digits as hyphens."""
    return re.sub(r"[\W_]+", "-", name.casefold()).strip("-")


def _build(path: Path, raw: RawTemplate, default_name: str, model_name: str) -> FileTemplate:
    text = raw.text.replace(MODEL_NAME_SLOT, model_name)
    if not text.strip():
        raise TemplateFileError(path, raw.line, raw.field, "the template is empty")
    pieces = tuple(SLOTS.split(text))
    if len(pieces) == 1:
        if not raw.preamble_ok:
            raise TemplateFileError(path, raw.line, raw.field,
                                    "the template has no {prompt} slot for the probe")
        pieces = (text.rstrip() + "\n\n", "")
    name = slug(raw.name if raw.name is not None else default_name)
    if not name:
        raise TemplateFileError(path, raw.line, "name",
                                f"{raw.name!r} has no letter or digit to name it by")
    where = path.name if raw.line is None else f"{path.name}:{raw.line}"
    return FileTemplate(PREFIX + name, pieces, where)


def load_template_file(
    path: Path, model_name: str = NEUTRAL_MODEL_NAME
) -> tuple[FileTemplate, ...]:
    """The file's templates as strategies. An unnamed template is named after the file
    (``Dan_11_0.json`` -> ``template:dan-11-0``), with its 1-based position when the file holds
    several. Raises TemplateFileError."""
    return load_template_files((path,), model_name)


def load_template_files(
    paths: Sequence[Path], model_name: str = NEUTRAL_MODEL_NAME
) -> tuple[FileTemplate, ...]:
    """All the files' templates; two templates of one name are an error (pointing at the
    second), since a strategy name must pick one template."""
    out: list[FileTemplate] = []
    seen: dict[str, str] = {}
    for path in paths:
        raws = parse_file(path)
        for index, raw in enumerate(raws, start=1):
            default = path.stem if len(raws) == 1 else f"{path.stem}-{index}"
            template = _build(path, raw, default, model_name)
            if template.name in seen:
                raise TemplateFileError(
                    path, raw.line, "name",
                    f"{template.name!r} is already the name of the template at "
                    f"{seen[template.name]}")
            seen[template.name] = template.source
            out.append(template)
    return tuple(out)
