"""The events seam (events.py): the runner reports through it, cli/'s RichEvents renders it.

Why: the runner and the services do not print; these pin what they tell and
how the CLI shows it, so the stderr lines stay as they were (`skipped ...`, `note: ...`,
`warning: ...`) and a library caller still hears about skipped records through logging.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from nexagauge_local.case import SourceRef
from nexagauge_local.cli.progress import RichEvents
from nexagauge_local.dataset import Dataset
from nexagauge_local.events import LogEvents, NullEvents
from nexagauge_local.records import RecordError
from nexagauge_local.runner import Runner
from nexagauge_local.settings import RunSettings

SAMPLE = Path(__file__).resolve().parents[1] / "nexagauge_local" / "data" / "sample.jsonl"


class Heard(NullEvents):
    """Every event but the advances, in order, as a tuple; the advances summed per node."""

    def __init__(self) -> None:
        self.events: list[tuple[object, ...]] = []
        self.done: Counter[str] = Counter()

    def skipped(self, error: RecordError) -> None:
        self.events.append(("skipped", str(error)))

    def progress_started(self, nodes: Sequence[str], total: int) -> None:
        self.events.append(("started", tuple(nodes), total))

    def advanced(self, node: str, n: int) -> None:
        self.done[node] += n

    def progress_finished(self) -> None:
        self.events.append(("finished",))


def _data(tmp_path: Path) -> Path:
    data = tmp_path / "d.jsonl"
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()[:3]
    data.write_text("\n".join([*lines, '{"output": ']) + "\n", encoding="utf-8")
    return data


@pytest.mark.parametrize("progress", [True, False])
def test_the_runner_reports_skips_and_progress_as_events(tmp_path: Path, progress: bool) -> None:
    heard = Heard()
    settings = RunSettings(target="refmatch", cache_dir=tmp_path / "c", on_error="skip",
                           progress=progress)
    Runner(settings, events=heard).run(Dataset(_data(tmp_path)))
    assert heard.events[0] == ("skipped", f"{tmp_path / 'd.jsonl'}:4: invalid JSON")
    if progress:
        assert heard.events[1:] == [("started", ("scan", "refmatch"), 3), ("finished",)]
        assert heard.done == {"scan": 3, "refmatch": 3}
    else:
        assert heard.events[1:] == [] and not heard.done


def test_rich_events_render_the_lines_the_runner_printed() -> None:
    buf = StringIO()
    events = RichEvents(Console(file=buf, width=40))
    events.skipped(RecordError(SourceRef(file="d.jsonl"), None, "invalid JSON [bold]x[/]"))
    events.note("not available in this build, skipped: a, b")
    events.warning("report.html was not written " + "long " * 20)
    events.info("judge: m on the hf backend (cpu)")
    events.advanced("scan", 1)  # no bars started: nothing drawn
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("skipped d.jsonl") and lines[0].endswith("invalid JSON [bold]x[/]")
    assert lines[1] == "note: not available in this build, skipped: a, b"
    assert lines[2].startswith("warning: report.html") and len(lines) == 4  # one line each
    assert lines[3] == "judge: m on the hf backend (cpu)"


def test_log_events_reach_logging(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="nexagauge_local"):
        LogEvents().skipped(RecordError(SourceRef(file="d.jsonl"), None, "invalid JSON"))
        LogEvents().warning("w")
        LogEvents().progress_started(["scan"], 3)  # progress goes nowhere
    assert [r.getMessage() for r in caplog.records] == ["skipped d.jsonl: invalid JSON",
                                                         "warning: w"]
