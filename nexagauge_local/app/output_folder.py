"""A run's output folder as a transaction: the previous complete run or the new complete run,
never a mix, and one run at a time.

Why: a run writes hundreds of files over minutes (a case report per case, metrics, the
summary, report.html, the manifest last). Written straight into --output-dir, a smaller second
run left the first run's case reports beside its own, and its manifest then vouched for them;
a crash or a full disk left half a run that looked like a whole one.

How:
- The run writes into a staging folder beside the output folder (`.NAME.staging-PID`, so on
  the same filesystem). When everything is written, the staging folder takes the output
  folder's place in one step (`libc.exchange_paths`), and the previous run is deleted.
- A lock file beside it (`.NAME.lock`, a POSIX record lock) keeps a second run off the folder: it refuses at
  once. The kernel drops the lock when its holder dies, even by kill -9, and the next run
  removes what a killed run left behind (its judgements are in the judge cache).
- A folder holding anything a run does not write (notes, another tool's output) is refused
  unless `--overwrite`: replacing it would delete them.
- Where the output folder itself cannot be replaced (a mount point such as a container's
  volume, or a folder in a parent we may not write), staging goes inside it and the finished
  files are moved in at the end; a crash during that last step is undone by the next run, from
  the journal folder the previous files were moved into.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from nexagauge_local.app.errors import OutputDirError
from nexagauge_local.audit.manifest import NOT_OUTPUTS
from nexagauge_local.libc import exchange_paths

# What a run, and the commands that add to a finished run (compare, agreement, export, sign),
# write at the top of its folder; anything else is someone else's and is never deleted unasked.
RUN_ENTRIES = frozenset(
    {"case_report", "metrics", "summary.json", "report.html", "compare.json", "agreement.json"}
    | NOT_OUTPUTS
)
EXPORT_PREFIX = "results."  # `export` writes results.<format>
# Inside-mode names (a folder that cannot be replaced keeps its staging inside).
INNER_LOCK = ".nexagauge.lock"
INNER_STAGING = ".nexagauge-staging-"
INNER_PREVIOUS = ".nexagauge-previous-"
# The disk said no: these fail a write wherever it lands. EACCES, EPERM and EROFS count as a
# write failure only on a path inside the staging folder (the input or a model may be
# unreadable for reasons of their own).
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
NOT_ALLOWED = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


def is_run_entry(name: str) -> bool:
    return (name in RUN_ENTRIES or name.startswith(EXPORT_PREFIX)
            or (name.startswith(".") and name.endswith(".tmp")))  # report.files.write_json's


def foreign_entries(folder: Path) -> list[str]:
    """Names at the top of `folder` that no run wrote (sorted)."""
    return sorted(name for name in _top_entries(folder) if not is_run_entry(name))


class OutputFolder:
    """One run's claim on --output-dir: the lock, the staging folder, the final swap.

    Use `OutputFolder.open(...)` as a context manager; write into `.staging`; call `commit()`
    when the last file is written. Leaving the block without a commit (an error, Ctrl-C)
    removes the staging folder and leaves the output folder as it was."""

    def __init__(self, final: Path, *, inside: bool, shown: Path | None = None) -> None:
        self.final = final
        self.shown = shown or final  # the folder as the user spelled it, for messages
        self.inside = inside
        pid = os.getpid()
        if inside:
            self.lock_path = final / INNER_LOCK
            self.staging = final / f"{INNER_STAGING}{pid}"
        else:
            self.lock_path = final.parent / f".{final.name}.lock"
            self.staging = final.parent / f".{final.name}.staging-{pid}"
        self._lock_fd: int | None = None
        self.committed = False

    # ------------------------------------------------------------ opening

    @classmethod
    @contextmanager
    def open(cls, folder: Path, *, overwrite: bool = False,
             keep: Iterable[Path] = ()) -> Iterator[OutputFolder]:
        """Check, lock and stage `folder`; refusals are OutputDirError before any work.
        `keep`: paths the run reads (its input, the judge cache) that must not lie inside a
        folder the run will replace."""
        final = Path(os.path.abspath(folder))
        if final.is_symlink():
            final = final.resolve()
        _check_shape(final, keep, folder)
        out = cls(final, inside=_must_stage_inside(final), shown=folder)
        out._lock()
        try:
            out._recover()
            out._check_contents(overwrite)
            out._make_staging()
            yield out
        finally:
            if not out.committed:
                _remove(out.staging)
            out._unlock()

    def _lock(self) -> None:
        try:
            self._lock_fd = _acquire(self.lock_path)
        except BlockingIOError:
            holder = _read_text(self.lock_path).strip()
            by = f" by process {holder}" if holder.isdigit() else ""
            raise OutputDirError(
                f"--output-dir {self.shown}: another run is writing into it (lock {self.lock_path} "
                f"held{by}); wait for it, or choose another folder") from None
        except OSError as exc:
            raise _cannot_write(self.shown, exc) from None

    def _unlock(self) -> None:
        if self._lock_fd is None:
            return
        # unlinked while still held, so a run waiting on this file sees it is gone (see _acquire)
        with suppress(OSError):
            os.unlink(self.lock_path)
        os.close(self._lock_fd)
        self._lock_fd = None

    def _check_contents(self, overwrite: bool) -> None:
        if overwrite or not self.final.is_dir():
            return
        foreign = foreign_entries(self.final)
        if foreign:
            more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
            raise OutputDirError(
                f"--output-dir {self.shown}: holds {foreign[0]!r}{more}, which no run wrote; choose "
                "an empty or new folder, or pass --overwrite to replace the folder and everything "
                "in it")

    def _make_staging(self) -> None:
        try:
            self.staging.mkdir(parents=not self.inside)
        except OSError as exc:
            raise _cannot_write(self.shown, exc) from None

    # ------------------------------------------------------------ the end

    def commit(self) -> None:
        """Put the staged run in the output folder's place, then delete the previous run."""
        if self.inside:
            self._commit_inside()
        elif not self.final.exists():
            os.rename(self.staging, self.final)
        elif exchange_paths(self.staging, self.final):
            _remove(self.staging)  # now the previous run
        else:  # no renameat2 here: two renames; a crash between them is undone by _recover
            previous = self.final.parent / f".{self.final.name}.previous-{os.getpid()}"
            os.rename(self.final, previous)
            os.rename(self.staging, self.final)
            _remove(previous)
        self.committed = True

    def _commit_inside(self) -> None:
        previous = self.final / f"{INNER_PREVIOUS}{os.getpid()}"
        previous.mkdir()
        for name in _top_entries(self.final):
            os.rename(self.final / name, previous / name)
        for entry in os.scandir(self.staging):
            os.rename(entry.path, self.final / entry.name)
        self.staging.rmdir()  # the journal's mark: from here on the new run is complete
        _remove(previous)

    def _recover(self) -> None:
        """Finish or undo what a killed run left (we hold the lock, so it is not running)."""
        if self.inside:
            for prev in _named(self.final, INNER_PREVIOUS):
                staging = self.final / f"{INNER_STAGING}{prev.name[len(INNER_PREVIOUS):]}"
                if staging.exists():  # died moving the new files in: put the previous back
                    for name in _top_entries(self.final):
                        _remove(self.final / name)
                    for entry in os.scandir(prev):
                        os.rename(entry.path, self.final / entry.name)
                _remove(prev)
            for stale in _named(self.final, INNER_STAGING):
                _remove(stale)
            return
        parent, name = self.final.parent, self.final.name
        for prev in _named(parent, f".{name}.previous-"):
            if not self.final.exists():  # died between the two renames of commit()
                os.rename(prev, self.final)
            else:
                _remove(prev)
        for stale in _named(parent, f".{name}.staging-"):
            _remove(stale)

    def write_failure(self, exc: OSError) -> OutputDirError | None:
        """The one-line error for a write that failed while staging (a full disk, a file too
        large for a quota or `ulimit -f`, a folder made read-only), or None when `exc` is not
        about writing the run."""
        where = exc.filename if isinstance(exc.filename, str) else None
        inside = where is not None and Path(where).is_relative_to(self.staging)
        if exc.errno in DISK_FULL or (exc.errno in NOT_ALLOWED and inside):
            at = f" at {Path(where).relative_to(self.staging)}" if where and inside else ""
            return OutputDirError(
                f"--output-dir {self.shown}: writing the run failed{at} ({exc.strerror}); the "
                "folder was left as it was and every judgement made is in the judge cache: run "
                "the same command again once the disk allows")
        return None


# ------------------------------------------------------------------ helpers


def _check_shape(final: Path, keep: Iterable[Path], shown: Path) -> None:
    if final.exists() and not final.is_dir():
        raise OutputDirError(f"--output-dir {shown}: is a file, not a folder")
    if final == Path(final.anchor) or final == Path.home().resolve():
        raise OutputDirError(f"--output-dir {shown}: a run replaces its output folder; choose a "
                             "folder of its own")
    ancestor = next(p for p in final.parents if p.exists())
    if not ancestor.is_dir():  # under a regular file
        raise _cannot_write(shown, NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR)))
    for path in keep:
        real = Path(os.path.abspath(path))
        if real.is_relative_to(final):
            raise OutputDirError(f"--output-dir {shown}: holds {real}, which this run reads and "
                                 "replacing the folder would delete; choose another folder")


def _must_stage_inside(final: Path) -> bool:
    """True when the folder exists but cannot be swapped: a mount point, or a parent this
    process may not write."""
    if not final.exists():
        return False
    return os.path.ismount(final) or not os.access(final.parent, os.W_OK | os.X_OK)


def _acquire(path: Path) -> int:
    """An exclusive lock on `path`, held by this process through the returned descriptor;
    BlockingIOError when another process holds it. A POSIX record lock (lockf), not flock: a
    flock belongs to the open file, which the run's forked workers share, so after a kill -9
    of the run a worker still dying would keep the folder locked; a record lock belongs to
    the process. Written by hand: the lock file is unlinked on release, so a waiter may lock an
    inode that is no longer the path's, and must check and retry."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EACCES, errno.EAGAIN):
                    raise BlockingIOError(exc.errno, exc.strerror) from None
                raise
            try:
                current = os.stat(path).st_ino
            except FileNotFoundError:
                current = -1
            if current == os.fstat(fd).st_ino:
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _named(folder: Path, prefix: str) -> list[Path]:
    """Entries of `folder` whose names start with `prefix` (no glob: a folder's name may hold
    glob characters)."""
    return [Path(e.path) for e in os.scandir(folder) if e.name.startswith(prefix)]


def _top_entries(folder: Path) -> list[str]:
    return [e.name for e in os.scandir(folder) if not e.name.startswith(".nexagauge")]


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with suppress(FileNotFoundError):
            path.unlink()


def _cannot_write(final: Path, exc: OSError) -> OutputDirError:
    reason = exc.strerror or type(exc).__name__
    return OutputDirError(f"--output-dir {final}: cannot be written ({reason})")
