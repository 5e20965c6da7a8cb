"""Content hashing for audit manifests: files, weight folders, tokenizers, prompt text.

Why a memo: a production judge is tens of GB, and hashing it on every run would cost minutes.
The memo remembers a file's sha256 keyed by absolute path + size + mtime_ns + inode, so an
unchanged file is hashed once per host: a rewrite in place moves mtime, a replacement (a new
download renamed over the old file, same size, mtime preserved by `cp -p` or an unpacked
archive) moves the inode. The memo is a convenience for *writing* manifests; a verifier who
does not trust the host should hash afresh (``memo=None``), because size and mtime can be forged.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

CHUNK = 1 << 20  # 1 MiB reads: large enough to be I/O bound, small enough to stream 16 GB
MEMO_FILE = "hash_memo.json"

# Files a Hugging Face style tokenizer is made of; the judge loader reads these, so they decide
# how prompts become tokens and belong in the manifest.
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "vocab.txt",
    "merges.txt",
    "tokenizer.model",
    "spiece.model",
    "chat_template.json",
    "chat_template.jinja",
)


class WeightFile(BaseModel):
    """One file of the judge's weights (path relative to the weights root, posix style)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str
    size: int
    sha256: str


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    """Hash of a string as UTF-8; used for prompt templates and chat templates."""
    return sha256_bytes(text.encode("utf-8"))


def canonical_json(obj: Any) -> bytes:
    """One byte form per JSON value (sorted keys, no spaces), so equal data hashes equally."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def sha256_json(obj: Any) -> str:
    """Hash of a JSON value in canonical form (output schemas, record objects)."""
    return sha256_bytes(canonical_json(obj))


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Streaming sha256 of a file; memory stays at one chunk whatever the file size."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


class HashMemo:
    """sha256 per file, remembered by (absolute path, size, mtime_ns, inode) in a JSON file.

    ``misses`` counts files actually read, so callers (and tests) can see the memo working.
    The JSON file is replaced atomically on ``save``; two processes saving at once lose at
    most each other's new entries, never the file.
    """

    def __init__(self, cache_dir: str | os.PathLike[str]):
        self.path = Path(cache_dir) / MEMO_FILE
        self.misses = 0
        self._dirty = False
        self._entries: dict[str, dict[str, Any]] = {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(data, dict):
                self._entries = {k: v for k, v in data.items() if isinstance(v, dict)}
        except (OSError, ValueError):
            self._entries = {}  # a missing or corrupt memo only costs re-hashing

    def sha256(self, path: str | os.PathLike[str]) -> str:
        p = Path(path).resolve()
        st = p.stat()
        key = str(p)
        hit = self._entries.get(key)
        if (hit and hit.get("size") == st.st_size and hit.get("mtime_ns") == st.st_mtime_ns
                and hit.get("inode") == st.st_ino):
            return str(hit["sha256"])
        digest = sha256_file(p)
        self.misses += 1
        self._entries[key] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns,
                              "inode": st.st_ino, "sha256": digest}
        self._dirty = True
        return digest

    def save(self) -> None:
        if not self._dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".hash_memo.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(self._entries, fh, sort_keys=True, indent=1)
        os.replace(tmp, self.path)
        self._dirty = False


def file_sha256(path: str | os.PathLike[str], memo: HashMemo | None = None) -> str:
    return memo.sha256(path) if memo is not None else sha256_file(path)


def hash_weights(path: str | os.PathLike[str], memo: HashMemo | None = None) -> list[WeightFile]:
    """Every file of a weights folder (sorted by relative path), or one weights file (a GGUF).

    Nothing is skipped: a file the loader might read and the manifest does not name is exactly
    the gap an auditor must not have.
    """
    root = Path(path)
    if root.is_file():  # a GGUF: its hash is remembered too (it was recomputed on every run)
        one = [WeightFile(file=root.name, size=root.stat().st_size, sha256=file_sha256(root, memo))]
        if memo is not None:
            memo.save()
        return one
    if not root.is_dir():
        raise FileNotFoundError(f"weights not found: {root}")
    files = sorted(
        (p for p in root.rglob("*") if p.is_file()), key=lambda p: p.relative_to(root).as_posix()
    )
    out = [
        WeightFile(
            file=p.relative_to(root).as_posix(), size=p.stat().st_size, sha256=file_sha256(p, memo)
        )
        for p in files
    ]
    if memo is not None:
        memo.save()
    return out


def combined_digest(entries: Mapping[str, str] | Iterable[WeightFile]) -> str:
    """One hash for a set of named files: sha256 over sorted ``name\\tsha256`` lines.

    Used as the short identity of a weights folder (the report's panel) and of a tokenizer.
    """
    pairs = (
        sorted(entries.items())
        if isinstance(entries, Mapping)
        else sorted((w.file, w.sha256) for w in entries)
    )
    return sha256_text("".join(f"{name}\t{digest}\n" for name, digest in pairs))


def tokenizer_files_in(folder: str | os.PathLike[str]) -> list[Path]:
    """The tokenizer files present in a model folder (an empty list for a lone GGUF file)."""
    root = Path(folder)
    if not root.is_dir():
        return []
    return [root / name for name in TOKENIZER_FILES if (root / name).is_file()]


def hash_tokenizer(
    files: Iterable[str | os.PathLike[str]],
    chat_template: str | None,
    memo: HashMemo | None = None,
) -> tuple[str | None, str | None]:
    """(tokenizer sha256, chat template sha256), either None when not given.

    The chat template is taken as the string the judge actually used (the caller reads it from
    the loaded tokenizer), not from a file, because templates also live inside GGUF metadata
    and tokenizer_config.json; this module never imports transformers.
    """
    named = {Path(f).name: file_sha256(f, memo) for f in files}
    if memo is not None:
        memo.save()
    tok = combined_digest(named) if named else None
    tmpl = sha256_text(chat_template) if chat_template is not None else None
    return tok, tmpl
