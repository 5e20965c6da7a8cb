"""SIGTERM and SIGHUP stop a command the way Ctrl-C does.

Why: a batch scheduler (Slurm's scancel, a job's time limit), a service manager (systemctl
stop) and a closed terminal do not press Ctrl-C; they send SIGTERM or SIGHUP, whose default
action kills Python on the spot, with no line said and no `finally` run. Turned into a
KeyboardInterrupt (a subclass of it), they take the path Ctrl-C already takes: every engine
and worker is closed, the output folder is left as it was, what the judge answered stays in
its cache, and the command exits 128 + the signal's number, as a shell reports a process a
signal ended.

Installed by the CLI's entry only (cli/__init__.py): a library caller keeps its own handlers.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from nexagauge_local.cli.exit_codes import INTERRUPTED

# The signals that stop a command cleanly. SIGINT is Python's own KeyboardInterrupt already.
STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """A stop signal arrived; caught wherever Ctrl-C is, so the clean-up is the same."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


_installed_by: int | None = None  # the CLI's process; a forked worker inherits the handler
_received: int | None = None  # the stop signal that arrived in the CLI's process, if one did


def _stop(signum: int, _frame: FrameType | None) -> None:
    if os.getpid() != _installed_by:
        # A forked worker (a multiprocessing pool's: its terminate() sends SIGTERM) inherits
        # this handler; there the signal keeps its default action, a quiet death.
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    # One stop is enough: a second TERM while engines close (systemd and Slurm signal every
    # process of the job, a user may press twice) must not cut the clean-up short with a
    # traceback. SIGKILL, which the managers send after their grace period, still ends it.
    global _received

    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    _received = signum
    raise Stopped(signum)


def install() -> Callable[[], None]:
    """Route SIGTERM and SIGHUP to a clean stop; returns what puts the previous handlers back
    (the CLI calls it when the command ends, so an in-process caller, CliRunner, keeps its
    own). A signal the caller set to be ignored stays ignored (`nohup` ignores SIGHUP so that
    a run outlives its terminal); one a caller already handles is left to it. Only the main
    thread may set handlers; elsewhere nothing is done."""
    import threading

    global _installed_by, _received

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    _installed_by, _received = os.getpid(), None
    ours = [sig for sig in STOP_SIGNALS if signal.getsignal(sig) == signal.SIG_DFL]
    for sig in ours:
        signal.signal(sig, _stop)

    def restore() -> None:
        for sig in ours:
            signal.signal(sig, signal.SIG_DFL)

    return restore


def stop_under(exc: BaseException) -> Stopped | None:
    """The stop that `exc` stands for, when a stop signal arrived during the command.

    Why: the handler raises wherever the main thread is, and C code that calls back into Python
    does not always let the exception through: pydantic-core turns it into a
    PydanticSerializationError when the signal lands in a model's serializer. A failure after
    a stop signal is that stop, whatever it became on its way up."""
    if isinstance(exc, Stopped):
        return exc
    return Stopped(_received) if _received is not None else None


@contextmanager
def stops_surfaced() -> Iterator[None]:
    """Re-raise as the stop it is a failure that a stop signal caused on its way up."""
    try:
        yield
    except Exception as exc:
        stop = stop_under(exc)
        if stop is None:
            raise
        raise stop from exc


def interrupted_by(exc: KeyboardInterrupt) -> str:
    """How the one line names what stopped the command."""
    return f"stopped by {exc.name}" if isinstance(exc, Stopped) else "interrupted"


def exit_code_of(exc: KeyboardInterrupt) -> int:
    """128 + the signal's number: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP."""
    return exc.exit_code if isinstance(exc, Stopped) else INTERRUPTED
