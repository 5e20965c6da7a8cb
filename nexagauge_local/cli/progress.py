"""The rich progress bars and status lines the commands draw on stderr, in one place.

Why shared: compare, gate, report and agreement draw the same transient bars (label, bar,
done/total, elapsed); one helper keeps them alike and off stdout, which carries results.
`generate`'s bar, which runs for minutes to hours, stays on screen and shows time remaining.
RichEvents renders the events the services emit (events.py): `run`'s bar per node, the
skipped-record lines, notes and warnings; the services themselves print nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from nexagauge_local.records import RecordError

# Fewer case reports than this render in a blink: a bar would only flicker.
CASE_BAR_MIN = 500


@contextmanager
def progress_bars(quiet: bool, width: int = 14) -> Iterator[Progress]:
    """A transient Progress on stderr whose tasks the caller adds; `width` pads the labels.

    It is not started: the caller starts it once there is work to show, so a command that
    fails first (a bad run folder) draws nothing, not even the blank line a finished display
    leaves on a non-terminal. It is stopped on the way out in any case.
    """
    progress = Progress(
        TextColumn(f"[bold]{{task.description:<{width}}}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        disable=quiet,
        transient=True,
    )
    try:
        yield progress
    finally:
        if progress.live.is_started:  # rich's stop() prints a newline even for a display never shown
            progress.stop()


@contextmanager
def case_bar(label: str, total: int, quiet: bool) -> Iterator[Callable[[int], None]]:
    """One per-case bar (none under CASE_BAR_MIN cases); yields the advance callback."""
    with progress_bars(quiet or total < CASE_BAR_MIN, width=10) as progress:
        progress.start()
        task = progress.add_task(label, total=total)
        yield lambda n: progress.advance(task, n)


@contextmanager
def lasting_bar(
    label: str, total: int, quiet: bool, console: Console
) -> Iterator[Callable[[int], None]]:
    """A bar that stays on screen when done, with time remaining; yields the advance callback."""
    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, disable=quiet) as progress:
        task = progress.add_task(label, total=total)
        yield lambda n: progress.advance(task, n)


class RichEvents:
    """events.RunEvents on a rich Console (default: stderr): one lasting bar per node (cases
    done / total, rate), and one-line `skipped`, `note:` and `warning:` messages.

    User text is never read as markup, and one message stays on one line (soft_wrap)."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._progress: Progress | None = None
        self._tasks: dict[str, TaskID] = {}

    def note(self, text: str) -> None:
        self._line("note:", text)

    def warning(self, text: str) -> None:
        self._line("warning:", text)

    def info(self, text: str) -> None:
        self.console.print(Text(text), soft_wrap=True)

    def skipped(self, error: RecordError) -> None:
        self._line("skipped", str(error))

    def progress_started(self, nodes: Sequence[str], total: int) -> None:
        self.progress_finished()
        self._progress = Progress(
            TextColumn("[bold]{task.description:<12}"),
            BarColumn(),
            MofNCompleteColumn(),
            _RateColumn(),
            TimeElapsedColumn(),
            console=self.console,
            transient=False,
        )
        self._progress.start()
        self._tasks = {node: self._progress.add_task(node, total=total) for node in nodes}

    def advanced(self, node: str, n: int) -> None:
        if self._progress is not None and node in self._tasks:
            self._progress.advance(self._tasks[node], n)

    def progress_finished(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress, self._tasks = None, {}

    def _line(self, label: str, text: str) -> None:
        self.console.print(Text.assemble((label, "yellow"), " ", text), soft_wrap=True)


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.1f} cases/s" if speed else "", style="cyan")
