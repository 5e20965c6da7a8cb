"""An answer that failed is never served from the cache as final: a re-run after the judge was
mended asks again for every cached answer that did not parse or was cut at its token limit
(and for every transport failure, which is never cached), serves the good ones, and its last
summary line says how many cached failures it retried."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.endpoint_stub import Reply, StubServer, is_probe
from tests.test_endpoint_cli import run

RECORDS = 4  # two redteam requests a record: 8


def broken(n: int, body: dict[str, Any]) -> Reply:
    """A server that ignores the schema after the probe, save its first answer; one answer
    cut at its limit, one request refused."""
    if is_probe(body) or n == 1:
        return Reply()
    if n == 2:
        return Reply(content='{"verdict": "sa', finish_reason="length")
    if n == 3:
        return Reply(status=400, error="scripted refusal")
    return Reply(content="The response is safe and helpful.")


def summary_line(output: str) -> str:
    [line] = [ln for ln in output.splitlines() if "judge: reused" in ln]
    return line


def test_a_rerun_asks_again_for_what_failed_and_says_so(tmp_path: Path) -> None:
    with StubServer(script=broken) as stub:
        first = run(tmp_path, stub.url, n=RECORDS)
    assert first.exit_code == 0, first.output
    assert "the judge failed on 7 of 8" in first.output
    with StubServer() as mended:  # the same judge, mended: every answer valid
        second = run(tmp_path, mended.url, "--overwrite", n=RECORDS)
        asked = len(mended.chat_calls()) - 1  # less the pre-flight probe
    assert second.exit_code == 0, second.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    usage = summary["nodes"]["redteam"]
    assert asked == usage["backend_requests"] == 7  # 6 cached failures + the refused one
    assert (usage["cache_hits"], usage["cache_retried"], usage["errors"]) == (1, 6, 0)
    assert summary["judge_outcomes"]["redteam"]["failed"] == 0
    assert "judge failed" not in second.output
    assert summary_line(second.output).strip() == (
        "judge: reused 1 cached judgement(s), computed 7, retried 6 that had failed")
    with StubServer() as again:  # nothing failed any more: all served
        third = run(tmp_path, again.url, "--overwrite", n=RECORDS)
        assert len(again.chat_calls()) == 1
    assert summary_line(third.output).strip() == "judge: reused 8 cached judgement(s), computed 0"
