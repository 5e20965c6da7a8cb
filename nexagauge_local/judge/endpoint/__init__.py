"""The `endpoint` judge backend: judging through an OpenAI-compatible server a team already
runs (vLLM, SGLang, llama.cpp, Ollama), with the node's JSON schema enforced by the server and
every answer validated here. Importing it loads httpx only. The red-team target behind a
server (redteam/target/endpoint.py) reuses its client, retry policy and set-up checks, so a
credential is handled by one set of rules whichever server it belongs to."""

from nexagauge_local.judge.endpoint.backend import EndpointBackend
from nexagauge_local.judge.endpoint.config import (
    EndpointConfig,
    EndpointOptions,
    EndpointUnusable,
    RetryPolicy,
    ServerIdentity,
    ServerRole,
)
from nexagauge_local.judge.endpoint.http import EndpointHTTP
from nexagauge_local.judge.endpoint.server import (
    ServedModel,
    ServerTokenCounter,
    pick_model,
    served_models,
)
from nexagauge_local.judge.endpoint.setup import (
    check_endpoint,
    endpoint_profile,
    resolve_endpoint,
)
from nexagauge_local.judge.endpoint.wire import ChatCompletion, server_message

__all__ = [
    "ChatCompletion", "EndpointBackend", "EndpointConfig", "EndpointHTTP", "EndpointOptions",
    "EndpointUnusable", "RetryPolicy", "ServedModel", "ServerIdentity", "ServerRole", "ServerTokenCounter",
    "check_endpoint", "endpoint_profile", "pick_model", "resolve_endpoint", "served_models",
    "server_message",
]
