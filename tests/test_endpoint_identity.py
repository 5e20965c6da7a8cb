"""What an endpoint judge is: the served id, the weights the server says it serves (`root`),
its window and the stated revision. A judge behind another root is another judge (its cached
verdicts are not reused), the same one on another host is not, and a run with no revision says
once what its cached verdicts are reused by."""

from __future__ import annotations

import json
from pathlib import Path

from tests.endpoint_stub import StubServer
from tests.test_endpoint_cli import run

REUSE = "no --judge-revision"


def usage(tmp_path: Path) -> dict[str, int]:
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    return dict(summary["nodes"]["redteam"])


def test_another_root_behind_the_same_id_is_another_judge(tmp_path: Path) -> None:
    with StubServer(root="/models/qwen2.5-7b") as stub:
        first = run(tmp_path, stub.url, "--overwrite")
    assert first.exit_code == 0, first.output
    judged = usage(tmp_path)["backend_requests"]
    assert judged > 0
    with StubServer(root="/models/llama-3-8b") as other:  # same id "stub-judge", other weights
        second = run(tmp_path, other.url, "--overwrite")
        asked = len(other.chat_calls()) - 1  # less the pre-flight probe
    assert second.exit_code == 0, second.output
    assert usage(tmp_path)["cache_hits"] == 0 and asked == judged
    with StubServer(root="/models/qwen2.5-7b") as moved:  # the first judge on another host
        third = run(tmp_path, moved.url, "--overwrite")
        assert len(moved.chat_calls()) == 1  # the probe alone: every verdict from the cache
    assert third.exit_code == 0, third.output
    assert usage(tmp_path)["cache_hits"] == judged


def test_the_summary_names_what_the_server_serves(tmp_path: Path) -> None:
    with StubServer(root="/models/qwen2.5-7b", max_model_len=8192) as stub:
        result = run(tmp_path, stub.url, "--judge-revision", "r1")
    assert result.exit_code == 0, result.output
    judge = json.loads((tmp_path / "out" / "summary.json").read_text())["judge"]
    assert judge["endpoint"]["root"] == "/models/qwen2.5-7b"
    assert judge["endpoint"]["max_model_len"] == 8192
    assert judge["fingerprint"] == ("endpoint:stub-judge@r1/json_schema"
                                    "[root=/models/qwen2.5-7b,max_model_len=8192]")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert judge["fingerprint"] in json.dumps(manifest)


def test_a_run_without_a_revision_says_once_what_verdicts_are_reused_by(
        tmp_path: Path) -> None:
    with StubServer(root="/models/qwen2.5-7b") as stub:
        unrevised = run(tmp_path, stub.url)
        revised = run(tmp_path, stub.url, "--overwrite", "--judge-revision", "2025-06-01")
    assert unrevised.exit_code == 0 and revised.exit_code == 0, unrevised.output
    said = [ln for ln in unrevised.output.splitlines() if REUSE in ln]
    assert len(said) == 1, unrevised.output
    assert "'stub-judge'" in said[0] and "'/models/qwen2.5-7b'" in said[0]
    assert said[0].startswith("warning:")
    assert REUSE not in revised.output
    with StubServer(root=None) as bare:  # a server that does not say what it serves
        alone = run(tmp_path, bare.url, "--overwrite")
    assert "alone (the server reports no root)" in alone.output
