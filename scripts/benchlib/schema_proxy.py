"""An OpenAI-compatible pass-through that lets nexa-gauge's structured calls reach llama-cpp-python.

nexa-gauge asks for `response_format: {"type": "json_schema", "json_schema": {"schema": S}}`
(the OpenAI form). llama-cpp-python's server (0.3.x) rejects that type with a 500 but constrains
decoding to a schema given as `{"type": "json_object", "schema": S}`. Without the constraint
the demo judge answers prose, every nexa-gauge redteam call fails to parse and is retried, and
the comparison measures nothing. This proxy rewrites only that field and forwards everything
else byte for byte, so both tools decode under a schema on the same weights.

Hand-written because it is a benchmark fixture of some 60 lines with the standard library; no
proxy library on the allowed list rewrites a JSON body.

    python scripts/benchlib/schema_proxy.py --listen 8089 --upstream http://127.0.0.1:8088
"""

from __future__ import annotations

import argparse
import json
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def rewrite_body(body: dict[str, Any]) -> dict[str, Any]:
    """The request with an OpenAI `json_schema` response format in llama-cpp-python's form."""
    fmt = body.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return body
    spec = fmt.get("json_schema") or {}
    schema = spec.get("schema") if isinstance(spec, dict) else None
    new_fmt: dict[str, Any] = {"type": "json_object"}
    if isinstance(schema, dict):
        new_fmt["schema"] = schema
    return {**body, "response_format": new_fmt}


def make_handler(upstream: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _forward(self, data: bytes | None) -> None:
            req = urllib.request.Request(upstream.rstrip("/") + self.path, data=data, method=self.command)
            for key in ("Content-Type", "Authorization", "Accept"):
                if self.headers.get(key):
                    req.add_header(key, self.headers[key])
            try:
                with urllib.request.urlopen(req, timeout=3600) as resp:
                    status, payload, ctype = resp.status, resp.read(), resp.headers.get("Content-Type")
            except urllib.error.HTTPError as exc:
                status, payload, ctype = exc.code, exc.read(), exc.headers.get("Content-Type")
            self.send_response(status)
            self.send_header("Content-Type", ctype or "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            self._forward(None)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                raw = json.dumps(rewrite_body(json.loads(raw))).encode()
            except (ValueError, AttributeError):
                pass  # not a JSON object: forward as sent, the upstream answers it
            self._forward(raw)

        def log_message(self, format: str, *args: Any) -> None:
            return  # the upstream server logs every request already

    return Handler


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--listen", type=int, required=True, help="port on 127.0.0.1")
    ap.add_argument("--upstream", required=True, help="llama-cpp-python server, e.g. http://127.0.0.1:8088")
    args = ap.parse_args(argv)
    server = ThreadingHTTPServer(("127.0.0.1", args.listen), make_handler(args.upstream))
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
