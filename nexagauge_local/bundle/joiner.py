"""Check a bundle against its MANIFEST.json and join split files: here and on the target.

Why this module imports nothing but the standard library (no pydantic, against house style):
on the target nothing is installed yet - pydantic and this package are *in* the bundle - so
install.sh runs this file's source with the target's bare python3 before pip touches
anything. The manifest's fields are therefore checked by hand in `read_manifest`, and the
functions return problems as text instead of printing (the caller says them).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MANIFEST_NAME = "MANIFEST.json"
SIGNATURE_NAME = MANIFEST_NAME + ".sig"  # audit/signing's format, beside the manifest
SCRIPT_NAME = "install.sh"
# the files a bundle holds besides those its manifest lists (install.sh is listed, and so
# checked, by bundles that list it; older manifests do not)
_OWN = frozenset({MANIFEST_NAME, SIGNATURE_NAME, SCRIPT_NAME})
MAX_NAMED = 10
MANIFEST_SCHEMA = "nexagauge-bundle/1"
READ_CHUNK = 4 * 1024 * 1024
_HEX64 = re.compile(r"[0-9a-f]{64}")


class ManifestError(ValueError):
    """MANIFEST.json is missing, not JSON, or a field is wrong (the message names it)."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(READ_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _field(obj: Any, key: str, at: str, kind: type, where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise ManifestError(f"{where}: {at}{key} is missing")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ManifestError(f"{where}: {at}{key} must be a {kind.__name__}")
    return value


def _rel_path(value: str, at: str, where: str) -> str:
    """A relative path inside the bundle; `..` or an absolute path would write outside it."""
    parts = value.split("/")
    if not value or value.startswith("/") or ".." in parts or "\\" in value:
        raise ManifestError(f"{where}: {at}path {value!r} must be a relative path in the bundle")
    return value


def _entry(obj: Any, at: str, where: str) -> dict[str, Any]:
    size = _field(obj, "size", at, int, where)
    digest = _field(obj, "sha256", at, str, where)
    if size < 0 or not _HEX64.fullmatch(digest):
        raise ManifestError(f"{where}: {at}size/sha256 invalid (sha256 is 64 lowercase hex)")
    path = _rel_path(_field(obj, "path", at, str, where), at, where)
    return {"path": path, "size": size, "sha256": digest}


def read_manifest(root: Path) -> list[dict[str, Any]]:
    """The files of the bundle in ROOT, each {path, size, sha256, parts: [{path, size, sha256}]}."""
    where = str(root / MANIFEST_NAME)
    try:
        data = json.loads((root / MANIFEST_NAME).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ManifestError(f"{where}: not found (is {root} a bundle folder?)") from exc
    except json.JSONDecodeError as exc:
        raise ManifestError(f"{where}: line {exc.lineno}: not JSON ({exc.msg})") from exc
    if not isinstance(data, dict) or data.get("schema") != MANIFEST_SCHEMA:
        raise ManifestError(f"{where}: schema must be {MANIFEST_SCHEMA!r}")
    files = []
    for i, obj in enumerate(_field(data, "files", "", list, where)):
        at = f"files[{i}]."
        entry = _entry(obj, at, where)
        raw_parts = obj.get("parts", [])
        if not isinstance(raw_parts, list):
            raise ManifestError(f"{where}: {at}parts must be a list")
        entry["parts"] = [_entry(p, f"{at}parts[{j}].", where) for j, p in enumerate(raw_parts)]
        if entry["parts"] and sum(p["size"] for p in entry["parts"]) != entry["size"]:
            raise ManifestError(f"{where}: {at}parts do not add up to the file's size")
        files.append(entry)
    return files


def _check(path: Path, size: int, digest: str, label: str) -> str | None:
    if not path.is_file():
        return f"{label}: missing"
    if path.stat().st_size != size:
        return f"{label}: {path.stat().st_size} bytes, the manifest says {size}"
    if sha256_file(path) != digest:
        return f"{label}: sha256 mismatch (the file is corrupt or was changed)"
    return None


def _joined_digest(root: Path, parts: list[dict[str, Any]]) -> str:
    h = hashlib.sha256()
    for part in parts:
        with open(root / part["path"], "rb") as fh:
            for block in iter(lambda: fh.read(READ_CHUNK), b""):
                h.update(block)
    return h.hexdigest()


def verify(root: Path) -> Iterator[str]:
    """Each problem of the bundle in ROOT as one line naming the file; nothing means sound.

    A split file counts as present when its parts are sound and their concatenation has the
    whole file's sha256, whether or not it has been joined yet. A file the manifest does not
    list is a problem too (one line naming them): pip's --find-links would see a wheel dropped
    into wheels/, and a signed manifest vouches only for what it lists.
    """
    files = read_manifest(root)
    for entry in files:
        whole = root / entry["path"]
        if not entry["parts"] or whole.is_file():
            problem = _check(whole, entry["size"], entry["sha256"], entry["path"])
            if problem is None or not entry["parts"]:
                if problem:
                    yield problem
                continue
        bad = [_check(root / p["path"], p["size"], p["sha256"], p["path"]) for p in entry["parts"]]
        problems = [b for b in bad if b]
        if problems:
            yield from problems
        elif _joined_digest(root, entry["parts"]) != entry["sha256"]:
            yield f"{entry['path']}: its parts join into a file with the wrong sha256"
    extra = unlisted(root, files)
    if extra:
        named = ", ".join(extra[:MAX_NAMED])
        more = f" and {len(extra) - MAX_NAMED} more" if len(extra) > MAX_NAMED else ""
        yield f"not listed in {MANIFEST_NAME}: {named}{more} (a bundle holds only what it lists)"


def unlisted(root: Path, files: list[dict[str, Any]]) -> list[str]:
    """Paths under ROOT (files, and links to folders, which a walk would not enter) that are
    neither listed in the manifest, a part of a listed file, nor the bundle's own files."""
    listed = set(_OWN)
    for entry in files:
        listed.add(entry["path"])
        listed.update(p["path"] for p in entry["parts"])
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        for name in [*filenames, *links]:
            rel = Path(dirpath, name).relative_to(root).as_posix()
            if rel not in listed:
                found.append(rel)
    return sorted(found)


def join(root: Path) -> list[str]:
    """Join every split file whose whole is absent or wrong; return the paths joined.

    Callers verify first (`verify`); the joined file is checked again before it replaces
    anything, so a part changed in between cannot slip through.
    """
    joined = []
    for entry in read_manifest(root):
        whole = root / entry["path"]
        if not entry["parts"] or _check(whole, entry["size"], entry["sha256"], "") is None:
            continue
        tmp = whole.with_name(whole.name + ".joining")
        with open(tmp, "wb") as out:
            for part in entry["parts"]:
                with open(root / part["path"], "rb") as fh:
                    shutil.copyfileobj(fh, out, READ_CHUNK)
        if sha256_file(tmp) != entry["sha256"]:
            tmp.unlink()
            raise ManifestError(f"{entry['path']}: joined file has the wrong sha256")
        os.replace(tmp, whole)
        joined.append(entry["path"])
    return joined
