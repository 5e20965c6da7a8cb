"""How the run's two SQLite caches (judge answers, embeddings) open their files and write.

One place, so both keep the same crash and disk-full behaviour: WAL with synchronous=NORMAL (a
committed transaction survives a process crash, SIGKILL included; an OS crash can drop the last
transactions but never corrupts the file), one short-lived connection per operation (cheap to
hold, safe in a forked worker), and a write the disk refuses is one error naming the file,
with what the cache holds left intact (SQLite rolls the transaction back).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path


class CacheWriteError(Exception):
    """A cache refused a write (a full disk, a read-only folder): the run must stop with one
    line naming the cache, not a traceback."""


def connect_wal(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=30.0)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    return con


@contextmanager
def writing(path: Path, label: str) -> Iterator[sqlite3.Connection]:
    """One write transaction on the cache at `path` (`label` names it in the error)."""
    try:
        with closing(connect_wal(path)) as con, con:
            yield con
    except sqlite3.OperationalError as exc:
        raise CacheWriteError(f"--cache-dir {path.parent}: the {label} {path.name} cannot be "
                              f"written ({exc}); what it holds is intact") from None
