"""What a service tells whoever watches it: the typed seam between the services and cli/.

Why a seam: the runner and the app/ services used to draw rich progress bars and print lines
on a Console of their own, so printing was spread over the package and a library caller got
terminal output nobody asked for. Now a service calls the events object it is given and
returns data; cli/progress.py renders the events with rich (bars, coloured `skipped` /
`note:` / `warning:` lines), NullEvents drops them, and LogEvents, the library's default,
hands the lines to `logging` (with logging unconfigured, Python still writes warnings to
stderr, as the runner's own Console used to).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from nexagauge_local.records import RecordError

__all__ = ["LogEvents", "Notices", "NullEvents", "RunEvents"]

log = logging.getLogger(__name__)


class Notices(Protocol):
    """One-line messages for the user; a service that only warns takes just this."""

    def note(self, text: str) -> None:
        """Something the user should know that changes nothing (shown as `note: text`)."""

    def warning(self, text: str) -> None:
        """Something went wrong but the work goes on (shown as `warning: text`)."""


class RunEvents(Notices, Protocol):
    """What a run reports while it works: skipped records, a plain line, per-node progress."""

    def info(self, text: str) -> None:
        """A plain line about the run (e.g. which judge on which backend)."""

    def skipped(self, error: RecordError) -> None:
        """A record the run leaves out (bad record, on_error "skip")."""

    def progress_started(self, nodes: Sequence[str], total: int) -> None:
        """The per-node work begins: `total` cases to pass through each of `nodes`."""

    def advanced(self, node: str, n: int) -> None:
        """`n` more cases are done with `node` (judged, scored, or not eligible)."""

    def progress_finished(self) -> None:
        """The per-node work is over (also when it failed part-way)."""


class NullEvents:
    """Drops every event: for services run for their data only (estimate, prompts, tests)."""

    def note(self, text: str) -> None:
        pass

    def warning(self, text: str) -> None:
        pass

    def info(self, text: str) -> None:
        pass

    def skipped(self, error: RecordError) -> None:
        pass

    def progress_started(self, nodes: Sequence[str], total: int) -> None:
        pass

    def advanced(self, node: str, n: int) -> None:
        pass

    def progress_finished(self) -> None:
        pass


class LogEvents(NullEvents):
    """The lines go to the `nexagauge_local` logger, progress nowhere: the library's default.

    Why logging: a library caller decides where messages go (or silences them) the usual way,
    and without any logging set up Python's last-resort handler still writes the warnings to
    stderr as bare text, so `evaluate()` keeps telling its caller about skipped records."""

    def note(self, text: str) -> None:
        log.warning("note: %s", text)

    def warning(self, text: str) -> None:
        log.warning("warning: %s", text)

    def info(self, text: str) -> None:
        log.info("%s", text)

    def skipped(self, error: RecordError) -> None:
        log.warning("skipped %s", error)
