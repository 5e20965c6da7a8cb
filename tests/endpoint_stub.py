"""A scripted OpenAI-compatible judge server on 127.0.0.1, for the endpoint backend's tests.

It serves GET /v1/models, POST /v1/chat/completions and vLLM's POST /tokenize from a thread.
By default each chat completion is a valid answer built from the request's own JSON schema
(so a node's real schema is honoured); a test scripts what the n-th call gets instead (a
status, a delay, prose, a cut answer) and reads back every call with its arrival time and how
many were in flight.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from nexagauge_local.judge.schemas import schema_value


@dataclass
class Reply:
    """What one chat completion gets. `content` None: a valid answer for the schema."""

    status: int = 200
    delay: float = 0.0
    content: str | None = None
    finish_reason: str = "stop"
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # the whole HTTP body instead of a chat completion
    error: str = "scripted failure"


@dataclass
class Call:
    path: str
    body: dict[str, Any]
    at: float
    in_flight: int


Script = Callable[[int, dict[str, Any]], Reply]


def obedient(n: int, body: dict[str, Any]) -> Reply:
    """A server that ignores `response_format` in front of a model that does as it is told:
    the answer is the first JSON object the last message asks for in words."""
    text = body["messages"][-1]["content"]
    start = text.find("{")
    if start < 0:
        return Reply(content="I cannot help with that.")
    try:
        asked, _ = json.JSONDecoder().raw_decode(text[start:])
    except ValueError:
        return Reply(content="I cannot help with that.")
    return Reply(content=json.dumps(asked))


def is_probe(body: dict[str, Any]) -> bool:
    """The pre-flight's schema probe (not a node's request)."""
    return bool(body.get("response_format", {}).get("json_schema", {}).get("name") == "probe")


def _stub_leaf(node: dict[str, Any]) -> Any:
    """The stub's value of a scalar schema node, inside its bounds."""
    kind = node.get("type")
    if kind == "string":
        return "stub answer"[: node.get("maxLength", 11)].ljust(node.get("minLength", 0), "x")
    if kind == "integer":
        return max(1, node.get("minimum", 1))
    if kind == "number":
        return float(node.get("minimum", 0.5))
    if kind == "boolean":
        return True
    raise ValueError(f"no value for {node!r}")


def value_for(node: dict[str, Any], defs: dict[str, Any]) -> Any:
    """A minimal valid value of a JSON schema (the node schemas' subset)."""
    return schema_value(node, defs, _stub_leaf)


def answer_for(body: dict[str, Any]) -> str:
    schema = body["response_format"]["json_schema"]["schema"]
    return json.dumps(value_for(schema, schema.get("$defs", {})))


class StubServer:
    """`with StubServer(script=...) as stub:` judge through `stub.url`."""

    def __init__(self, script: Script | None = None, models: tuple[str, ...] = ("stub-judge",),
                 api_key: str | None = None, max_model_len: int = 4096,
                 reject_schema: bool = False, root: str | None = "/weights/stub-judge") -> None:
        self.script = script or (lambda n, body: Reply())
        self.models, self.api_key, self.max_model_len = models, api_key, max_model_len
        self.reject_schema = reject_schema
        self.root = root  # what vLLM's GET /models says each id serves; None: not said
        self.calls: list[Call] = []
        # (route, query, Authorization header) of every request, pre-flight included
        self.seen: list[tuple[str, str, str | None]] = []
        self._lock = threading.Lock()
        self._in_flight = 0
        self.max_in_flight = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet test output
                pass

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None,
                      raw: bytes | None = None) -> None:
                data = raw if raw is not None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _route(self) -> str:
                """The path without its query, the request noted in `stub.seen`."""
                route, _, query = self.path.partition("?")
                stub.seen.append((route, query, self.headers.get("Authorization")))
                return route

            def _authorised(self) -> bool:
                if stub.api_key and self.headers.get("Authorization") != f"Bearer {stub.api_key}":
                    self._send(401, {"error": {"message": "invalid API key"}})
                    return False
                return True

            def do_GET(self) -> None:
                route = self._route()
                if not self._authorised():
                    return
                if route == "/v1/models":
                    self._send(200, {"object": "list", "data": [
                        {"id": m, "object": "model", "max_model_len": stub.max_model_len}
                        | ({"root": stub.root} if stub.root else {}) for m in stub.models]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                if stub._stopped:  # a killed server answers nothing on kept-alive connections
                    self.close_connection = True
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                route = self._route()
                if not self._authorised():
                    return
                if route == "/tokenize":
                    text = " ".join(m["content"] for m in body.get("messages", []))
                    self._send(200, {"count": len(text.split()), "max_model_len": 4096})
                    return
                if route != "/v1/chat/completions":
                    self._send(404, {"error": {"message": "not found"}})
                    return
                if stub.reject_schema and "response_format" in body:
                    self._send(400, {"error": {"message": "response_format json_schema is "
                                                          "not supported"}})
                    return
                stub._chat(self, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._stopped = False

    def _chat(self, handler: Any, body: dict[str, Any]) -> None:
        with self._lock:
            n = sum(1 for c in self.calls if c.path == "/v1/chat/completions")
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            self.calls.append(Call("/v1/chat/completions", body, time.monotonic(), self._in_flight))
        try:
            reply = self.script(n, body)
            if reply.delay:
                time.sleep(reply.delay)
            if reply.raw is not None:
                handler._send(reply.status, None, reply.headers, reply.raw)
            elif reply.status != 200:
                handler._send(reply.status, {"error": {"message": reply.error}}, reply.headers)
            else:
                content = answer_for(body) if reply.content is None else reply.content
                handler._send(200, {
                    "id": f"chatcmpl-{n}", "object": "chat.completion", "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 10 + n, "completion_tokens": len(content) // 4 + 1,
                              "total_tokens": 0},
                }, reply.headers)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout)
            pass
        finally:
            with self._lock:
                self._in_flight -= 1

    def chat_calls(self) -> list[Call]:
        return [c for c in self.calls if c.path == "/v1/chat/completions"]

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        """The server gone: nothing listens on its port any more."""
        if not self._stopped:
            self._stopped = True
            self.server.shutdown()
            self.server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
