"""The glibc calls the run needs and no library wraps: handing freed pages back, tying a
forked worker's life to its parent's, and swapping two folders atomically. Elsewhere (musl,
macOS) the first two are no-ops and the swap reports that it cannot be done.

`malloc_trim(0)`: glibc's malloc only returns memory at the top of its heap; a page freed
below a live block stays resident. The case loop frees a whole shard's objects every shard,
and the id index and score blocks it keeps are allocated in between, so without this the
loop's RSS grew by the shard's leftovers, shard after shard (measured: 218 -> 181 MB peak over
300,000 refmatch cases, with the case loop also keeping only the data it needs, then about 92
bytes a case, the data kept). It releases every free page of every arena (glibc >= 2.8).

`prctl(PR_SET_PDEATHSIG, SIGKILL)`: a forked pool worker outlives a parent killed with
`kill -9`; it then fails to write its next result and prints a BrokenPipeError traceback
onto the user's terminal, minutes after the run died.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import signal
from functools import cache
from typing import Any

_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_AT_FDCWD = -100  # linux/fcntl.h
_RENAME_EXCHANGE = 2  # linux/fs.h


@cache
def _libc() -> Any | None:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name, use_errno=True) if name else None
    except OSError:
        return None


def release_free_pages() -> bool:
    """True when the C library released its free pages (glibc), False where it cannot."""
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is None:
        return False
    trim(0)
    return True


def die_with_parent(parent_pid: int, sig: int = signal.SIGKILL) -> bool:
    """Called first thing in a worker: the kernel sends it `sig` when the thread that started
    it dies (SIGTERM for a worker that must first stop children of its own). True where that
    is set up (Linux); a parent already gone ends the worker now."""
    prctl = getattr(_libc(), "prctl", None)
    if prctl is None or prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
        return False
    if os.getppid() != parent_pid:  # the parent died before the line above ran
        os._exit(0)
    return True


def exchange_paths(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Swap two existing paths in one step: `renameat2(RENAME_EXCHANGE)` (Linux 3.15, glibc
    2.28). A run's finished folder takes the place of the previous one with no moment where
    the output folder is missing or half old, half new, even if the process dies right there
    (os.replace cannot put a folder over a non-empty one). False where the C library, the
    kernel or the filesystem lacks it; any other failure is an OSError naming `a`."""
    fn = getattr(_libc(), "renameat2", None)
    if fn is None:
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), os.fspath(a))
