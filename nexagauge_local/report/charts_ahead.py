"""report.html's charts drawn on the second core while the run's last steps use the first.

Why: at the end of a run one core is idle. Drawing the page's charts (importing matplotlib,
constrained layout, SVG) was about 1 s of a 6.5 s 2,000-record refmatch run, all of it after
the scoring pool had stopped, while the main process hashed the input and rendered 2,000 case
blocks. A forked child now draws them meanwhile.

How: the child calls the very functions the page calls, with the same arguments, inside the
chart memo (charts.memo_in, keyed by exact arguments): every chart it finishes is a memo hit
when the page asks for it. Under --no-cache the memo is a temporary folder that lives only as
long as this render, so a cold run still draws every chart it shows. Nothing else crosses from
the child: if it fails, is killed or is slow, the page draws what is missing itself, so the
bytes of report.html never depend on the child.

A child is forked only when that is safe and useful: a fork start method, no other Python
thread alive (a lock held by one would stay held in the child), and two cores or more.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from nexagauge_local.libc import die_with_parent
from nexagauge_local.report import charts

WAIT_LIMIT_S = 300.0  # a child still drawing after this is killed; the page draws the rest


def can_fork_ahead() -> bool:
    """Whether a child may be forked here: a POSIX fork, only this thread, a second core."""
    if not hasattr(os, "fork") or threading.active_count() != 1:
        return False
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) >= 2


class ChartsAhead:
    """A forked child drawing charts into `memo_folder`; `wait()` before reading them."""

    def __init__(self, pid: int, memo_folder: Path) -> None:
        self.pid = pid
        self.memo_folder = memo_folder
        self.exit_code: int | None = None

    @classmethod
    def fork(cls, job: Callable[[], object], memo_folder: Path) -> ChartsAhead | None:
        """Fork a child that runs `job` with the chart memo in `memo_folder`; None where no
        child could start (the caller draws everything itself)."""
        parent = os.getpid()
        try:
            pid = os.fork()
        except OSError:
            return None
        if pid == 0:  # the child: never returns into the caller's stack
            code = 1
            try:
                die_with_parent(parent)
                with charts.memo_in(memo_folder):
                    job()
                code = 0
            except BaseException:  # noqa: BLE001, S110 - the parent draws whatever is missing
                pass
            finally:
                os._exit(code)  # no atexit, no flushing the parent's buffered output twice
        return cls(pid, memo_folder)

    def wait(self, limit_s: float = WAIT_LIMIT_S) -> int | None:
        """Wait for the child (at most `limit_s`, then kill it); its exit code, None if killed."""
        if self.exit_code is not None:
            return self.exit_code
        deadline = time.monotonic() + limit_s
        while True:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by someone else: its charts are in the memo or not
                self.exit_code = -1
                return None
            if pid:
                self.exit_code = os.waitstatus_to_exitcode(status)
                return self.exit_code
            if time.monotonic() >= deadline:
                self.stop()
                return None
            time.sleep(0.005)

    def stop(self) -> None:
        """Kill the child if it still runs and reap it (an error or Ctrl-C in the parent)."""
        if self.exit_code is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            _, status = os.waitpid(self.pid, 0)
            self.exit_code = os.waitstatus_to_exitcode(status)
        if self.exit_code is None:
            self.exit_code = -signal.SIGKILL


@contextlib.contextmanager
def charts_ahead(job: Callable[[], object] | None, memo_folder: Path | None) -> Iterator[
        ChartsAhead | None]:
    """Run `job` (it draws charts) in a forked child for the duration of the block; yields the
    child's handle (None: no job or no child, draw in-process). `memo_folder`: the run's chart
    memo, None under --no-cache (a temporary one is used and removed afterwards)."""
    if job is None or not can_fork_ahead():
        yield None
        return
    with contextlib.ExitStack() as stack:
        folder = memo_folder
        if folder is None:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ngl-charts-")))
        ahead = ChartsAhead.fork(job, folder)
        if ahead is not None:
            stack.callback(ahead.stop)
        yield ahead
