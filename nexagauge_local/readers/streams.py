"""Pipes, FIFOs and stdin: read once into a private file, hashing the bytes on the way.

Why spool: a run reads its input more than once (validate every record first, then run them,
then hash them for the manifest), and a pipe can be read only once. The spool holds the bytes
exactly as they came (compressed stays compressed), so every reader and the audit treat it as
the file it would have been, and the manifest's sha256 is the hash of what came down the pipe.
Memory stays at one buffer; the disk holds one copy of the stream for the run's lifetime.
"""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path
from typing import IO

from nexagauge_local.readers.base import DatasetError

_CHUNK = 1 << 20


def is_stream(path: Path) -> bool:
    """A FIFO, a pipe (`/dev/fd/63` from `<(...)`), a socket or a character device: something
    that is read once, as opposed to a regular file or a folder."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


def spool(source: IO[bytes], dest: Path, name: str) -> str:
    """Copy `source` to `dest`; return the sha256 of the bytes. DatasetError when it is empty."""
    digest = hashlib.sha256()
    size = 0
    with dest.open("wb") as out:
        while chunk := source.read(_CHUNK):
            digest.update(chunk)
            out.write(chunk)
            size += len(chunk)
    if size == 0:
        raise DatasetError(name, "the stream is empty; expected JSON, JSONL, CSV or Parquet "
                                 "records")
    return digest.hexdigest()


def spool_path(path: Path, dest_dir: Path, name: str) -> Path:
    """Spool the stream at `path` into `dest_dir`, keeping its name's suffixes (a FIFO named
    data.csv.gz still says CSV)."""
    dest = dest_dir / f"stream-{path.name or 'input'}"
    with path.open("rb") as fh:
        spool(fh, dest, name)
    return dest
