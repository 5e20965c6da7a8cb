"""report.html's charts drawn by a forked child while the run gathers its manifest facts
(report/charts_ahead.py): the page must be the same bytes whether the child drew every chart,
failed, hung or never started, and no child may outlive the render."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nexagauge_local.dataset import Dataset
from nexagauge_local.report import charts, charts_ahead
from nexagauge_local.report.charts_ahead import ChartsAhead
from nexagauge_local.report.html import draw_charts_job, render_html, write_report
from nexagauge_local.report.rundata import load_run
from nexagauge_local.runner import RunOutcome

SAMPLE = Path(__file__).resolve().parents[1] / "nexagauge_local" / "data" / "sample.jsonl"
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")  # when the page was rendered


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, RunOutcome, str]]:
    """A refmatch run of the sample (enough cases for the score histogram), its outcome and
    its page as drawn in-process, without any memo."""
    from nexagauge_local.runner import Runner
    from nexagauge_local.settings import RunSettings

    tmp = tmp_path_factory.mktemp("ahead")
    out = tmp / "out"
    settings = RunSettings(target="refmatch", output_dir=out, cache_dir=tmp / "cache",
                           progress=False)
    outcome = Runner(settings).run(Dataset(SAMPLE))
    page = render_html(load_run(out), digest=outcome.digest)
    assert page.count("<svg") >= 1  # the histogram is there to be drawn ahead
    yield out, outcome, STAMP.sub("T", page)


def _page(out: Path, outcome: RunOutcome, ahead: ChartsAhead, target: Path) -> str:
    write_report(out, output=target, digest=outcome.digest, ahead=ahead)
    return STAMP.sub("T", target.read_text(encoding="utf-8"))


def _no_drawing_here(*_: object, **__: object) -> None:
    raise AssertionError("the page drew a chart the child should have drawn")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_child_draws_every_chart_and_the_page_is_unchanged(
        finished: tuple[Path, RunOutcome, str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    out, outcome, expected = finished
    job = draw_charts_job(out, outcome.digest)
    assert job is not None
    ahead = ChartsAhead.fork(job, tmp_path / "memo")
    assert ahead is not None
    monkeypatch.setattr(charts, "_draw", _no_drawing_here)  # in this process only
    assert _page(out, outcome, ahead, tmp_path / "report.html") == expected
    assert ahead.exit_code == 0 and _gone(ahead.pid)
    assert list((tmp_path / "memo").glob("*.svg"))  # what the page read


@pytest.mark.parametrize("job_kind", ["fails", "hangs"])
def test_a_child_that_fails_or_hangs_leaves_the_charts_to_the_page(
        finished: tuple[Path, RunOutcome, str], tmp_path: Path, job_kind: str) -> None:
    out, outcome, expected = finished

    def job() -> None:
        if job_kind == "fails":
            raise RuntimeError("no fonts")
        time.sleep(120)

    ahead = ChartsAhead.fork(job, tmp_path / "memo")
    assert ahead is not None
    if job_kind == "hangs":
        assert ahead.wait(limit_s=0.3) is None  # killed at its limit
    else:
        assert ahead.wait(limit_s=60) == 1
    assert _gone(ahead.pid)
    assert _page(out, outcome, ahead, tmp_path / "report.html") == expected


def test_an_error_in_the_block_kills_the_child_and_removes_the_temporary_memo(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(charts_ahead, "can_fork_ahead", lambda: True)
    seen: list[ChartsAhead] = []
    with (pytest.raises(KeyboardInterrupt),
          charts_ahead.charts_ahead(lambda: time.sleep(120), None) as ahead):
        assert ahead is not None
        seen.append(ahead)
        assert ahead.memo_folder.is_dir()  # --no-cache: a folder for this render only
        raise KeyboardInterrupt
    assert _gone(seen[0].pid) and not seen[0].memo_folder.exists()


def test_no_child_is_forked_while_another_thread_runs() -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not charts_ahead.can_fork_ahead()  # its locks would stay held in the child
        with charts_ahead.charts_ahead(lambda: None, None) as ahead:
            assert ahead is None
    finally:
        stop.set()
        other.join()


def test_no_job_when_the_digest_does_not_stand_for_the_folder(
        finished: tuple[Path, RunOutcome, str]) -> None:
    out, _, _ = finished
    assert draw_charts_job(out, None) is None  # `report` re-renders: the page digests the files
    with charts_ahead.charts_ahead(None, None) as ahead:
        assert ahead is None
