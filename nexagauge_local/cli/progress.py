"""The rich progress bars the commands draw on stderr, in one place.

Why shared: compare, gate, report and agreement draw the same transient bars (label, bar,
done/total, elapsed); one helper keeps them alike and off stdout, which carries results.
`generate`'s bar, which runs for minutes to hours, stays on screen and shows time remaining.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

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
