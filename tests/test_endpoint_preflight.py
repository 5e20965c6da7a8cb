"""The pre-flight's schema probe asks in words for what its schema forbids, so only a server
whose grammar enforces the schema answers it right: a server that ignores `response_format`
in front of an obedient model, or one whose answer is cut at its length limit, stops the run
with one line, exit 2, before any record is judged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nexagauge_local.judge.cache import DB_NAME
from nexagauge_local.judge.endpoint import EndpointConfig, EndpointUnusable, check_endpoint
from nexagauge_local.judge.endpoint.server import PROBE_ASKED, PROBE_PROMPT
from tests.endpoint_stub import Reply, StubServer, is_probe, obedient
from tests.kill_helpers import committed_count
from tests.test_endpoint_cli import one_line_exit_2, run


def test_an_obedient_model_on_a_server_that_ignores_the_schema_fails(tmp_path: Path) -> None:
    with StubServer(script=obedient) as stub:
        one_line_exit_2(run(tmp_path, stub.url), "ignores response_format", "schema forbids")
        [probe] = stub.chat_calls()  # the probe alone: no record was judged
    # what the stand-in answered is what the words asked: an obedient model passes no probe
    assert json.dumps(PROBE_ASKED) in probe.body["messages"][-1]["content"]
    assert committed_count(tmp_path / "cache" / DB_NAME) == 0
    assert not (tmp_path / "out" / "summary.json").exists()


def test_the_probe_words_contradict_its_schema() -> None:
    """What the prompt asks for is not valid against the schema the probe sends."""
    with StubServer(script=obedient) as stub:
        try:
            check_endpoint(EndpointConfig(url=stub.url, model="stub-judge"))
        except EndpointUnusable:
            pass
        [probe] = stub.chat_calls()
    schema: dict[str, Any] = probe.body["response_format"]["json_schema"]["schema"]
    assert probe.body["messages"][-1]["content"] == PROBE_PROMPT
    assert set(PROBE_ASKED).isdisjoint(schema["required"])
    assert schema["additionalProperties"] is False


def test_a_probe_answer_cut_at_its_length_limit_fails(tmp_path: Path) -> None:
    def cut(n: int, body: dict[str, Any]) -> Reply:
        return Reply(finish_reason="length") if is_probe(body) else Reply()

    with StubServer(script=cut) as stub:
        one_line_exit_2(run(tmp_path, stub.url), "cut at", "finish_reason length")
        assert len(stub.chat_calls()) == 1


def test_a_server_that_enforces_the_schema_passes(tmp_path: Path) -> None:
    with StubServer() as stub:  # the stub's default: a valid answer for the schema sent
        result = run(tmp_path, stub.url)
    assert result.exit_code == 0, result.output
