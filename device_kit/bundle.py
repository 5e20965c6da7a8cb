"""Split files into parts no larger than one device call can carry; join and verify them there.

Why parts are packed into "calls": a device call carries at most 64 MiB of working tree, so a
244 MB wheel must travel in several calls, while small wheels can share one. Each part is
written straight into the folder of the call that carries it (`calls/NN/`), so a call carries
exactly one folder and the plan needs no copying here.

Why this file imports nothing but the standard library (no pydantic, against house style):
on the device the kit's wheels are not installed when it is joined - they are *in* the kit,
pydantic among them (the device image lacks it) - so the device runs this file as a script,
`python3 device_kit/bundle.py join ...`. The manifest is therefore a set of frozen
dataclasses validated by hand in `Manifest.from_json`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

MANIFEST_SCHEMA = "nexagauge-device-kit/1"
MiB = 1024 * 1024
DEFAULT_PART_LIMIT = 55 * MiB  # leaves ~9 MiB of the 64 MiB per call for the working tree
READ_CHUNK = 4 * MiB

FileKind = Literal["wheel", "tokenizer", "other"]
FILE_KINDS = ("wheel", "tokenizer", "other")
_HEX64 = re.compile(r"[0-9a-f]{64}")


class BundleError(RuntimeError):
    """A part or file is missing, has the wrong size, or its sha256 does not match."""


@dataclass(frozen=True)
class Part:
    name: str
    offset: int
    size: int
    sha256: str
    call: int  # 1-based index of the device call that carries it


@dataclass(frozen=True)
class FileEntry:
    name: str
    kind: FileKind
    size: int
    sha256: str
    parts: tuple[Part, ...]


@dataclass(frozen=True)
class Manifest:
    part_limit: int
    calls: int
    files: tuple[FileEntry, ...]
    notes: dict[str, Any] = field(default_factory=dict)
    schema: str = MANIFEST_SCHEMA

    def parts_of_call(self, call: int) -> list[Part]:
        return [p for f in self.files for p in f.parts if p.call == call]

    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def dump(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str, where: str = "manifest.json") -> Manifest:
        """Parse and check every field; a fault names the file and the field's path."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BundleError(f"{where}: not JSON (line {exc.lineno}: {exc.msg})") from exc
        check = _Checker(where)
        check.equal(data, "schema", MANIFEST_SCHEMA)
        files = []
        for i, f in enumerate(check.items(data, "files")):
            at = f"files[{i}]"
            parts = tuple(
                Part(
                    name=check.name(p, "name", f"{at}.parts[{j}]"),
                    offset=check.integer(p, "offset", f"{at}.parts[{j}]"),
                    size=check.integer(p, "size", f"{at}.parts[{j}]"),
                    sha256=check.digest(p, "sha256", f"{at}.parts[{j}]"),
                    call=check.integer(p, "call", f"{at}.parts[{j}]", minimum=1),
                )
                for j, p in enumerate(check.items(f, "parts", at))
            )
            kind = check.name(f, "kind", at)
            if kind not in FILE_KINDS:
                raise BundleError(f"{where}: {at}.kind must be one of {FILE_KINDS}, got {kind!r}")
            files.append(
                FileEntry(
                    name=check.name(f, "name", at),
                    kind=kind,  # type: ignore[arg-type]
                    size=check.integer(f, "size", at),
                    sha256=check.digest(f, "sha256", at),
                    parts=parts,
                )
            )
        notes = data.get("notes", {})
        if not isinstance(notes, dict):
            raise BundleError(f"{where}: notes must be an object")
        return cls(
            part_limit=check.integer(data, "part_limit", minimum=1),
            calls=check.integer(data, "calls"),
            files=tuple(files),
            notes=notes,
        )


class _Checker:
    """Field checks for the manifest; each fault names file, path and field."""

    def __init__(self, where: str) -> None:
        self.where = where

    def _get(self, obj: Any, key: str, at: str) -> Any:
        if not isinstance(obj, dict) or key not in obj:
            raise BundleError(f"{self.where}: {at + '.' if at else ''}{key} is missing")
        return obj[key]

    def equal(self, obj: Any, key: str, want: str) -> None:
        if self._get(obj, key, "") != want:
            raise BundleError(f"{self.where}: {key} must be {want!r}")

    def items(self, obj: Any, key: str, at: str = "") -> list[Any]:
        value = self._get(obj, key, at)
        if not isinstance(value, list):
            raise BundleError(f"{self.where}: {at + '.' if at else ''}{key} must be a list")
        return value

    def name(self, obj: Any, key: str, at: str = "") -> str:
        value = self._get(obj, key, at)
        if not isinstance(value, str) or not value or "/" in value:
            raise BundleError(f"{self.where}: {at}.{key} must be a plain file name")
        return value

    def integer(self, obj: Any, key: str, at: str = "", minimum: int = 0) -> int:
        value = self._get(obj, key, at)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise BundleError(
                f"{self.where}: {at + '.' if at else ''}{key} must be an integer >= {minimum}"
            )
        return value

    def digest(self, obj: Any, key: str, at: str) -> str:
        value = self._get(obj, key, at)
        if not isinstance(value, str) or not _HEX64.fullmatch(value):
            raise BundleError(f"{self.where}: {at}.{key} must be 64 lowercase hex digits")
        return value


# ------------------------------------------------------------------ pure parts


def chunk_ranges(size: int, limit: int) -> list[tuple[int, int]]:
    """(offset, length) of each part; an empty file is one empty part (it still gets joined)."""
    if limit <= 0:
        raise ValueError("part limit must be positive")
    if size == 0:
        return [(0, 0)]
    return [(off, min(limit, size - off)) for off in range(0, size, limit)]


def pack_calls(sizes: Sequence[int], limit: int) -> list[int]:
    """1-based call index for each part: first-fit decreasing, every call's total <= limit.

    Few calls matter more than order: each call costs device time and must follow the last
    within the machine's 30 s warm window.
    """
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    loads: list[int] = []
    calls = [0] * len(sizes)
    for i in order:
        if sizes[i] > limit:
            raise ValueError(f"part {i} has {sizes[i]} bytes, over the {limit}-byte limit")
        for c, load in enumerate(loads):
            if load + sizes[i] <= limit:
                loads[c] += sizes[i]
                calls[i] = c + 1
                break
        else:
            loads.append(sizes[i])
            calls[i] = len(loads)
    return calls


def sha256_file(path: Path, offset: int = 0, size: int | None = None) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        fh.seek(offset)
        left = size
        while left is None or left > 0:
            block = fh.read(READ_CHUNK if left is None else min(READ_CHUNK, left))
            if not block:
                break
            h.update(block)
            if left is not None:
                left -= len(block)
    return h.hexdigest()


def call_dir(root: Path, call: int) -> Path:
    return root / "calls" / f"{call:02d}"


# ------------------------------------------------------------------ build (here)


def build(
    files: Sequence[tuple[Path, FileKind]],
    out_dir: Path,
    limit: int = DEFAULT_PART_LIMIT,
    notes: dict[str, object] | None = None,
) -> Manifest:
    """Split `files` into parts under `out_dir/calls/NN/` and write `out_dir/manifest.json`.

    Old call folders are removed first, so a rebuilt kit never carries a stale part.
    """
    names = [p.name for p, _ in files]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"two kit files share a name: {', '.join(dupes)}")
    shutil.rmtree(out_dir / "calls", ignore_errors=True)
    plan: list[tuple[int, int, int]] = []  # (file index, offset, size)
    for fi, (path, _) in enumerate(files):
        plan += [(fi, off, n) for off, n in chunk_ranges(path.stat().st_size, limit)]
    calls = pack_calls([n for _, _, n in plan], limit)
    parts: list[list[Part]] = [[] for _ in files]
    for (fi, off, n), call in zip(plan, calls, strict=True):
        src = files[fi][0]
        name = f"{src.name}.part{len(parts[fi]):03d}"
        target = call_dir(out_dir, call) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        _copy_range(src, target, off, n)
        parts[fi].append(Part(name=name, offset=off, size=n, sha256=sha256_file(target), call=call))
    entries = tuple(
        FileEntry(
            name=p.name, kind=k, size=p.stat().st_size, sha256=sha256_file(p), parts=tuple(ps)
        )
        for (p, k), ps in zip(files, parts, strict=True)
    )
    manifest = Manifest(
        part_limit=limit, calls=max(calls, default=0), files=entries, notes=dict(notes or {})
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "manifest.json").write_text(manifest.dump() + "\n")
    return manifest


def _copy_range(src: Path, dst: Path, offset: int, size: int) -> None:
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        fin.seek(offset)
        left = size
        while left > 0:
            block = fin.read(min(READ_CHUNK, left))
            if not block:
                raise BundleError(f"{src} ended early at byte {offset + size - left}")
            fout.write(block)
            left -= len(block)


# ------------------------------------------------------------------ join (on the device)


def load_manifest(path: Path) -> Manifest:
    try:
        text = path.read_text()
    except FileNotFoundError as exc:
        raise BundleError(f"manifest not found: {path}") from exc
    return Manifest.from_json(text, str(path))


def verify_parts(manifest: Manifest, stage: Path) -> None:
    """Every part present in `stage` with its size and sha256; the first fault is named."""
    for entry in manifest.files:
        for part in entry.parts:
            path = stage / part.name
            if not path.is_file():
                raise BundleError(
                    f"{part.name}: missing from {stage} (carried by call {part.call})"
                )
            if path.stat().st_size != part.size:
                raise BundleError(
                    f"{part.name}: {path.stat().st_size} bytes, manifest says {part.size}"
                )
            if sha256_file(path) != part.sha256:
                raise BundleError(f"{part.name}: sha256 mismatch (corrupt part, call {part.call})")


def join(manifest: Manifest, stage: Path, into: Path) -> list[Path]:
    """Verify the parts, join each file into `into`, verify the whole file's sha256."""
    verify_parts(manifest, stage)
    into.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    for entry in manifest.files:
        target = into / entry.name
        with open(target, "wb") as fout:
            for part in sorted(entry.parts, key=lambda p: p.offset):
                with open(stage / part.name, "rb") as fin:
                    shutil.copyfileobj(fin, fout, READ_CHUNK)
        if target.stat().st_size != entry.size or sha256_file(target) != entry.sha256:
            raise BundleError(f"{entry.name}: joined file does not match its sha256")
        out.append(target)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Device-side entry point: `bundle.py join --manifest M --stage S --into D`."""
    parser = argparse.ArgumentParser(description="join and verify a device kit")
    sub = parser.add_subparsers(dest="cmd", required=True)
    j = sub.add_parser("join", help="verify parts in STAGE, join them into INTO")
    j.add_argument("--manifest", type=Path, required=True)
    j.add_argument("--stage", type=Path, required=True)
    j.add_argument("--into", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        manifest = load_manifest(args.manifest)
        joined = join(manifest, args.stage, args.into)
    except BundleError as exc:
        print(f"kit: {exc}", file=sys.stderr)
        return 2
    total = sum(p.stat().st_size for p in joined)
    print(f"kit: {len(joined)} files joined and verified ({total / MiB:.1f} MiB) in {args.into}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
