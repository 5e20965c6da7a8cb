"""How the run's two SQLite caches (judge answers, embeddings) open their files and write.

One place, so both keep the same crash and disk-full behaviour: WAL with synchronous=NORMAL (a
committed transaction survives a process crash, SIGKILL included; an OS crash can drop the last
transactions but never corrupts the file), one short-lived connection per operation (cheap to
hold, safe in a forked worker), and a write the disk refuses is one error naming the file,
with what the cache holds left intact (SQLite rolls the transaction back).

A file that is no longer a database (overwritten, cut short by a crash or a copy onto a full
disk) is one error too, raised when the cache is opened, before a run does any work: SQLite
only notices such damage on the page it happens to read, which could be hours into a run.

Several runs may share one cache folder at once: WAL lets readers and the one writer work
side by side, and a writer waits up to BUSY_TIMEOUT_S for another's transaction (each is one
batch of answers, milliseconds) instead of failing with "database is locked".
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

BUSY_TIMEOUT_S = 30.0
_HEADER = b"SQLite format 3\x00"
_DAMAGED = frozenset({"SQLITE_CORRUPT", "SQLITE_NOTADB"})


class CacheStoreError(Exception):
    """A cache under --cache-dir cannot be used: the run must stop with one line naming the
    file and what to do, not a traceback."""


class CacheWriteError(CacheStoreError):
    """A cache refused a write (a full disk, a read-only folder); what it holds is intact."""


class CacheDamaged(CacheStoreError):
    """A cache file is not a sound SQLite database (overwritten, truncated)."""


def connect_wal(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    return con


def _where(path: Path, label: str) -> str:
    return f"--cache-dir {path.parent}: the {label} {path.name}"


def damaged(path: Path, label: str, why: object) -> CacheDamaged:
    return CacheDamaged(f"{_where(path, label)} is damaged ({why}); move it aside (or delete "
                        "it: it only saves work, and what it held is recomputed) and run again")


def failure(path: Path, label: str, exc: sqlite3.DatabaseError) -> CacheStoreError:
    """The one-line error for what SQLite said about the cache at `path`."""
    code = getattr(exc, "sqlite_errorname", "")
    if code in _DAMAGED:
        return damaged(path, label, exc)
    hint = ("; free space on that disk (or choose another --cache-dir) and run the same "
            "command again" if code == "SQLITE_FULL" else "")
    return CacheWriteError(f"{_where(path, label)} cannot be written ({exc}); what it holds "
                           f"is intact{hint}")


def _of_the_file(exc: sqlite3.DatabaseError) -> bool:
    """Whether SQLite's error is about the file or the disk (full, read-only, damaged) and
    not the statement (a constraint a bad row broke, which is a bug to see whole)."""
    return (isinstance(exc, sqlite3.OperationalError)
            or getattr(exc, "sqlite_errorname", "") in _DAMAGED)


@contextmanager
def reading(path: Path, label: str) -> Iterator[sqlite3.Connection]:
    """A connection for reads on the cache at `path`; damage found there is a CacheDamaged."""
    try:
        with closing(connect_wal(path)) as con:
            yield con
    except sqlite3.DatabaseError as exc:
        if not _of_the_file(exc):
            raise
        raise failure(path, label, exc) from None


@contextmanager
def writing(path: Path, label: str) -> Iterator[sqlite3.Connection]:
    """One write transaction on the cache at `path` (`label` names it in the error)."""
    try:
        with closing(connect_wal(path)) as con, con:
            yield con
    except sqlite3.DatabaseError as exc:
        if not _of_the_file(exc):
            raise
        raise failure(path, label, exc) from None


def open_store(path: Path, label: str, schema: str) -> None:
    """Create the cache's tables, or check an existing file is a whole database first."""
    truncated = _cut_short(path)
    if truncated:
        raise damaged(path, label, truncated)
    with reading(path, label) as con:
        con.executescript(schema)


def _cut_short(path: Path) -> str | None:
    """Why the database file is shorter than its own header says, or None.

    Hand-written because SQLite checks this only when it reads a missing page. Its header
    (https://www.sqlite.org/fileformat.html, section 1.3) holds the page size (offset 16) and
    the database's size in pages (offset 28), valid when the change counter (24) equals the
    version-valid-for number (92). A WAL file with frames in it may still hold pages that a
    checkpoint cut short by a crash had not yet copied, so then SQLite is left to judge.
    """
    try:
        with path.open("rb") as fh:
            head = fh.read(100)
            size = os.fstat(fh.fileno()).st_size
        wal = Path(f"{path}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            return None
    except OSError:
        return None  # missing (a new cache) or unreadable: SQLite says which
    if len(head) < 100 or not head.startswith(_HEADER) or head[24:28] != head[92:96]:
        return None
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    if size < pages * page_size:
        return f"{size} bytes, where its header says {pages} pages of {page_size}"
    return None
