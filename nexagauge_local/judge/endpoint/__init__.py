"""The `endpoint` judge backend: judging through an OpenAI-compatible server a team already
runs (vLLM, SGLang, llama.cpp, Ollama), with the node's JSON schema enforced by the server and
every answer validated here. Importing it loads httpx only."""

from nexagauge_local.judge.endpoint.backend import EndpointBackend
from nexagauge_local.judge.endpoint.config import (
    EndpointConfig,
    EndpointOptions,
    EndpointUnusable,
    RetryPolicy,
)
from nexagauge_local.judge.endpoint.http import EndpointHTTP
from nexagauge_local.judge.endpoint.server import ServerTokenCounter
from nexagauge_local.judge.endpoint.setup import (
    check_endpoint,
    endpoint_profile,
    resolve_endpoint,
)

__all__ = [
    "EndpointBackend", "EndpointConfig", "EndpointHTTP", "EndpointOptions", "EndpointUnusable",
    "RetryPolicy", "ServerTokenCounter", "check_endpoint", "endpoint_profile", "resolve_endpoint",
]
