"""`generate`: answer every probe with the model under test and write records for `run redteam`.

Crash-safe the same way judge runs are: records are appended and flushed chunk by chunk, and a
rerun skips the case_ids already in the output file, so a killed generation resumes. A record
whose request failed (a target server that kept refusing) is written, so the audit counts it,
and dropped again by the next run, which asks once more.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from nexagauge_local.judge import Messages
from nexagauge_local.redteam.suites.probe_file import ProbeItem
from nexagauge_local.redteam.target.types import Responder, Response

T = TypeVar("T")


@dataclass(frozen=True)
class TargetAsk:
    """How the model under test is asked: the same for `generate` and every static attack.
    `chunk_size` answers are one engine call and one synced append; without `resume` the
    output file is started over."""

    max_tokens: int
    system_prompt: str | None = None
    chunk_size: int = 64
    resume: bool = True

    @classmethod
    def of(cls, max_tokens: int, system_prompt: str | None, *, fresh: bool,
           batch_size: int | None) -> TargetAsk:
        """From the command line's --max-tokens, --system-prompt, --fresh and --batch-size."""
        return cls(max_tokens, system_prompt, chunk_size=batch_size or 64, resume=not fresh)


@dataclass
class TargetUsage:
    """What the model under test was asked and spent: `generate` and the static attacks
    count the same things, each adding its own counts (GenerateStats, AttackStats)."""

    skipped_existing: int = 0
    truncated: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    device_seconds: float = 0.0
    wall_seconds: float = 0.0
    engine_calls: int = 0

    def spent(self, resp: Response) -> None:
        self.prompt_tokens += resp.prompt_tokens
        self.output_tokens += resp.output_tokens
        self.device_seconds += resp.device_seconds


@dataclass
class GenerateStats(TargetUsage):
    probes: int = 0
    generated: int = 0
    truncated_ids: list[str] = field(default_factory=list)
    failed_ids: list[str] = field(default_factory=list)


def existing_ids(path: Path) -> set[str]:
    """case_ids already written (a previous, possibly interrupted, run); a torn last line from a
    crash is ignored and will be regenerated."""
    if not path.exists():
        return set()
    done: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            done.add(str(json.loads(line)["case_id"]))
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
    return done


def conversation(item: ProbeItem, system_prompt: str | None) -> Messages:
    msgs: Messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return msgs + [{"role": "user", "content": item.prompt}]


def generation_meta(responder: Responder, max_tokens: int) -> dict[str, Any]:
    """What every record's `generation` block says of the responder. A target server's base
    URL (never its credentials: the responder holds it bare) is its `server` attribute, which
    local engines lack."""
    meta: dict[str, Any] = {"model": responder.model, "backend": responder.name,
                            "max_tokens": max_tokens}
    server = getattr(responder, "server", None)
    if server:
        meta["server"] = server
    return meta


def response_meta(resp: Response) -> dict[str, Any]:
    """What one answer cost and how it ended, for its record's `generation` block."""
    out: dict[str, Any] = {"prompt_tokens": resp.prompt_tokens,
                           "output_tokens": resp.output_tokens, "finished": resp.finished}
    if resp.wall_seconds is not None:
        out["wall_seconds"] = round(resp.wall_seconds, 3)
    if resp.error is not None:
        out["error"] = resp.error
    return out


def answered_record(item: ProbeItem, resp: Response, meta: dict[str, Any]) -> dict[str, Any]:
    """The probe's record with the model's answer as `output`; the probe block stays intact so
    `run redteam` can score it, and `generation` says how the answer was made. A failed
    request's `output` is empty, so the audit counts it as no answer rather than losing it."""
    return item.record | {"output": resp.text, "generation": meta | response_meta(resp)}


def is_failed(record: dict[str, Any]) -> bool:
    """A record written for a request that failed (generation.error set)."""
    gen = record.get("generation")
    return isinstance(gen, dict) and bool(gen.get("error"))


def drop_failed(path: Path) -> int:
    """Remove the failed records of an earlier run so this one asks for them again; the file
    is replaced atomically (a crash leaves the old one). Returns how many were dropped."""
    if not path.exists():
        return 0
    kept: list[str] = []
    dropped = 0
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        try:
            failed = is_failed(json.loads(line))
        except (json.JSONDecodeError, TypeError, AttributeError):
            failed = False
        dropped += failed
        if not failed:
            kept.append(line)
    if dropped:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(kept), encoding="utf-8")
        os.replace(tmp, path)
    return dropped


def truncate_torn_tail(path: Path) -> None:
    """Drop a partial last line left by a crash so appended records start on a fresh line."""
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    path.write_bytes(data[: data.rfind(b"\n") + 1])


def resume_output(output: Path, resume: bool) -> set[str]:
    """Make `output` ready to append to and return the case_ids already in it: started over
    without `resume`, a crash's torn last line dropped, failed records dropped to ask again."""
    output.parent.mkdir(parents=True, exist_ok=True)
    if not resume and output.exists():
        output.unlink()
    truncate_torn_tail(output)
    drop_failed(output)
    return existing_ids(output)


def pending(items: Sequence[T], case_id: Callable[[T], str], output: Path, resume: bool,
            usage: TargetUsage, progress: Callable[[int], None] | None) -> list[T]:
    """The items whose answers `output` does not hold yet (made ready to append to); those it
    holds are counted as skipped and reported to `progress` at once."""
    done = resume_output(output, resume)
    todo = [it for it in items if case_id(it) not in done]
    usage.skipped_existing = len(items) - len(todo)
    if progress and usage.skipped_existing:
        progress(usage.skipped_existing)
    return todo


def append_answers(
    todo: Sequence[T],
    output: Path,
    ask: Callable[[Sequence[T]], list[Response]],
    record: Callable[[T, Response], dict[str, Any]],
    *,
    chunk_size: int,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[T, Response, dict[str, Any]]]:
    """Ask for `todo` chunk by chunk and append each answer's record to `output`, flushed and
    synced per chunk, so a crash loses only the chunk in flight; yields (item, answer, record)
    as each is written. One engine call per chunk: `generate` and the static attacks share it."""
    with output.open("a", encoding="utf-8") as fh:
        for start in range(0, len(todo), chunk_size):
            chunk = todo[start: start + chunk_size]
            for item, resp in zip(chunk, ask(chunk), strict=True):
                rec = record(item, resp)
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
                yield item, resp, rec
            fh.flush()
            os.fsync(fh.fileno())
            if progress:
                progress(len(chunk))


def generate(items: Sequence[ProbeItem], responder: Responder, output: Path, how: TargetAsk,
             progress: Callable[[int], None] | None = None) -> GenerateStats:
    started = time.perf_counter()
    stats = GenerateStats(probes=len(items))
    todo = pending(items, lambda it: it.case_id, output, how.resume, stats, progress)
    meta = generation_meta(responder, how.max_tokens)
    if how.system_prompt:
        meta["system_prompt"] = how.system_prompt

    def ask(chunk: Sequence[ProbeItem]) -> list[Response]:
        stats.engine_calls += 1
        return responder.respond([conversation(it, how.system_prompt) for it in chunk],
                                 how.max_tokens)

    for item, resp, _ in append_answers(todo, output, ask,
                                        lambda it, r: answered_record(it, r, meta),
                                        chunk_size=how.chunk_size, progress=progress):
        stats.generated += 1
        stats.spent(resp)
        if resp.error is not None:
            stats.failed += 1
            stats.failed_ids.append(item.case_id)
        elif not resp.finished:
            stats.truncated += 1
            stats.truncated_ids.append(item.case_id)
    stats.wall_seconds = time.perf_counter() - started
    return stats
