"""report/writer.py: case reports written on a thread, errors raised in the caller's thread."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from nexagauge_local.report import writer as W


def test_every_file_is_on_disk_when_close_returns(tmp_path: Path) -> None:
    with W.BackgroundWriter(max_pending=4) as files:  # a small queue: put must wait, not drop
        for i in range(200):
            files.put(os.fspath(tmp_path / f"c{i}.json"), f'{{"i": {i}}}\n')
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"c{i}.json" for i in range(200))
    assert (tmp_path / "c7.json").read_text() == '{"i": 7}\n'


def test_a_failed_write_is_raised_again_as_the_same_error(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk part-way: the writer stops writing, the next put (or close) raises the same
    OSError, errno and file name kept, so the output folder's one-line message can name it."""
    full = OSError(errno.ENOSPC, "No space left on device", "c3.json")
    written: list[str] = []

    def fake_write(path: str, text: str) -> None:
        if path.endswith("c3.json"):
            raise full
        written.append(path)

    monkeypatch.setattr(W, "write_text_atomic", fake_write)
    files = W.BackgroundWriter()
    with pytest.raises(OSError) as caught:
        for i in range(10):
            files.put(os.fspath(tmp_path / f"c{i}.json"), "{}\n")
        files.close()
    assert caught.value is full and caught.value.errno == errno.ENOSPC
    assert not any(p.endswith(("c4.json", "c9.json")) for p in written)  # nothing after it
    files.abandon()  # closing again after the failure does not hang


def test_leaving_on_an_exception_abandons_what_is_queued(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (or any error) in the run: the block exits without writing the queued reports
    and without waiting on a queue nobody drains."""
    calls: list[str] = []
    monkeypatch.setattr(W, "write_text_atomic", lambda path, text: calls.append(path))
    with pytest.raises(KeyboardInterrupt), W.BackgroundWriter() as files:
        files._abandon.set()  # as if the interrupt came before the thread got to them
        for i in range(50):
            files.put(os.fspath(tmp_path / f"c{i}.json"), "{}\n")
        raise KeyboardInterrupt
    assert calls == [] and not files._thread.is_alive()
