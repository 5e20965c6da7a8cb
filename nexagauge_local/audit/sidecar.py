"""The manifest's per-record lists, as JSON-lines files beside it that it hashes.

Why sidecars: a manifest holding one entry per input record and one per case report held
about 2 KB a case in memory while it was built and serialised (a million-case run: gigabytes).
The two lists now stream to ``manifest.records.jsonl`` and ``manifest.outputs.jsonl``, one
canonical JSON object per line, and manifest.json holds each file's sha256 and line count. The
signature covers manifest.json, so it covers the sidecars too; `verify` re-hashes them before
it trusts a line of them.

Why a hand-written external sort (``sorted_files``): the outputs list is in path order, so the
writer and the verifier can walk it side by side; a folder of a million case reports is too
many names to sort in memory at a bounded size, and the standard library has no external sort.
Chunks of names are sorted in memory, spilled to temporary files and merged with heapq.merge.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from nexagauge_local.audit.hashing import canonical_json, sha256_file

RECORDS_NAME = "manifest.records.jsonl"
OUTPUTS_NAME = "manifest.outputs.jsonl"
SORT_CHUNK = 100_000  # names sorted in memory at a time (about 10 MB)

M = TypeVar("M", bound=BaseModel)


class SidecarRef(BaseModel):
    """Where a per-record list lives (relative to the output folder), its hash and length."""

    model_config = ConfigDict(extra="forbid")

    path: str
    sha256: str
    count: int


class SidecarError(ValueError):
    """A sidecar is missing, changed since the manifest hashed it, or not the expected lines."""

    def __init__(self, file: str, problem: str) -> None:
        self.file = file
        super().__init__(f"{file}: {problem}")


def line_of(row: BaseModel) -> bytes:
    """One row's canonical line: the audit's canonical JSON, newline-terminated."""
    return canonical_json(row.model_dump(mode="json")) + b"\n"


def tmp_name(name: str) -> str:
    """Where a sidecar is written before it is renamed into place."""
    return f".{name}.tmp"


def write_sidecar(folder: str | os.PathLike[str], name: str, rows: Iterable[BaseModel]) -> SidecarRef:
    """Stream rows into folder/name (atomically: a reader never sees half a list)."""
    path = Path(folder) / name
    tmp = path.with_name(tmp_name(name))
    digest, count = hashlib.sha256(), 0
    with tmp.open("wb") as fh:
        for row in rows:
            line = line_of(row)
            fh.write(line)
            digest.update(line)
            count += 1
    os.replace(tmp, path)
    return SidecarRef(path=name, sha256=digest.hexdigest(), count=count)


def check_sidecar(folder: str | os.PathLike[str], ref: SidecarRef) -> None:
    """Raise SidecarError unless folder/ref.path hashes as the manifest says."""
    try:
        actual = sha256_file(Path(folder) / ref.path)
    except FileNotFoundError:
        raise SidecarError(ref.path, "missing (manifest.json lists it)") from None
    if actual != ref.sha256:
        raise SidecarError(
            ref.path, f"changed (expected sha256 {ref.sha256[:16]}, actual {actual[:16]})"
        )


def read_sidecar(folder: str | os.PathLike[str], ref: SidecarRef, model: type[M]) -> Iterator[M]:
    """The rows, one at a time; check_sidecar first when the file must be trusted."""
    path = Path(folder) / ref.path
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        raise SidecarError(ref.path, "missing (manifest.json lists it)") from None
    with fh:
        for n, line in enumerate(fh, start=1):
            try:
                yield model.model_validate_json(line)
            except ValueError as exc:
                raise SidecarError(ref.path, f"line {n}: not a {model.__name__} ({exc})") from None


def _walk(root: str, skip: Callable[[str], bool]) -> Iterator[str]:
    """Every file's path relative to root (posix), in directory order; symlinks followed."""
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        with os.scandir(os.path.join(root, rel_dir)) as entries:
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                if entry.is_dir():
                    stack.append(rel)
                elif entry.is_file() and not skip(rel):
                    yield rel


def sorted_files(root: str | os.PathLike[str], skip: Callable[[str], bool] = lambda _: False,
                 chunk: int = SORT_CHUNK) -> Iterator[str]:
    """Every file under root, relative and sorted, holding at most ``chunk`` names at a time."""
    names = _walk(os.fspath(root), skip)
    with ExitStack() as stack:
        runs: list[Iterator[str]] = []
        batch: list[str] = []
        for name in names:
            batch.append(name)
            if len(batch) >= chunk:
                runs.append(_spill(sorted(batch), stack))
                batch = []
        batch.sort()
        if not runs:
            yield from batch
            return
        runs.append(iter(batch))
        yield from heapq.merge(*runs)


def _spill(names: list[str], stack: ExitStack) -> Iterator[str]:
    """Write one sorted run to an anonymous temporary file; read it back lazily."""
    fh = stack.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n"))  # noqa: SIM115
    # JSON per line: a file name may hold a newline, which would split a plain line
    fh.writelines(json.dumps(n) + "\n" for n in names)
    fh.seek(0)
    return (json.loads(line) for line in fh)
