"""Case reports written on a thread of their own, so the run never waits on the filesystem.

Why a thread: creating a file is a metadata operation whose cost depends on the disk, not on
us. On the 2-core VMs this project runs on, `openat(O_CREAT)` took 755 µs on average (strace;
50 µs on a good minute), and writing 2,000 case reports held the main thread for 2.9 s of a
7.9 s refmatch run while the scoring pool waited for it to hand out work. The syscalls release
the GIL, so one writer thread hides them; serialising stays with the caller (it needs the GIL
either way). The queue is bounded, so a disk slower than the run holds the run back instead of
piling reports up in memory.

A write that fails (a full disk, a quota) is raised again, as the same exception, by the next
`put` or by `close`: app/output_folder.py turns it into its one-line error and keeps the
previous run.
"""

from __future__ import annotations

import os
import queue
import threading
from dataclasses import dataclass
from types import TracebackType
from typing import Self

from nexagauge_local.case_report import CaseReport
from nexagauge_local.report.files import case_filename, json_text, write_text_atomic
from nexagauge_local.report.rundata import CaseFile
from nexagauge_local.report.view_cases import CaseDigester

MAX_PENDING = 256  # reports queued at most (~1 MB of text at 4 KB a report)


class BackgroundWriter:
    """`put(path, text)` returns at once; `close()` returns when every file is on disk."""

    def __init__(self, max_pending: int = MAX_PENDING) -> None:
        self._queue: queue.Queue[tuple[str, str] | None] = queue.Queue(max_pending)
        self._error: Exception | None = None
        self._abandon = threading.Event()
        self._thread = threading.Thread(target=self._drain, name="case-report-writer",
                                        daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while (item := self._queue.get()) is not None:
            if self._error is None and not self._abandon.is_set():
                try:
                    write_text_atomic(*item)
                except Exception as exc:  # noqa: BLE001 - raised again in the caller's thread
                    self._error = exc  # the rest is skipped; put/close raise it

    def _raise_pending(self) -> None:
        if self._error is not None:
            raise self._error

    def put(self, path: str, text: str) -> None:
        self._raise_pending()
        self._queue.put((path, text))

    def close(self) -> None:
        """Wait for every queued file; raise the first write that failed."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._raise_pending()

    def abandon(self) -> None:
        """Stop without writing what is still queued (the run is failing anyway)."""
        self._abandon.set()
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:
            self.abandon()


@dataclass
class CaseSink:
    """Where the runner hands each finished case report: its file in `case_dir` (none when the
    run has no output folder) and, when there is one, report.html's digest, fed with exactly
    what the file holds (the JSON read back from its text: a value JSON cannot hold is a str
    in both)."""

    case_dir: str
    files: BackgroundWriter
    digester: CaseDigester | None = None

    def write(self, case_id: str, report: CaseReport) -> None:
        if not self.case_dir:
            return
        name = case_filename(case_id)
        text = json_text(report.to_dict(), indent=None)
        self.files.put(os.path.join(self.case_dir, name), text)
        if self.digester is not None:
            self.digester.add(CaseFile(name, CaseReport.from_json(text)), text)
