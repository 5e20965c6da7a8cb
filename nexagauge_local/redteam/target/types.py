"""What a responder takes and gives back, independent of the engine that runs the model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from nexagauge_local.judge import Messages


@dataclass(frozen=True)
class Response:
    text: str
    prompt_tokens: int
    output_tokens: int
    # True when the model stopped on its own; False when max_tokens cut it off.
    finished: bool
    device_seconds: float
    # Why there is no answer: a request to a target server that still failed after its
    # retries. One failed request must not cost the batch, so it comes back as a Response.
    error: str | None = None
    # A server's time for this request, retries included (its device is out of sight, so
    # device_seconds stays 0); None for a local engine, whose time is device_seconds.
    wall_seconds: float | None = None

    @classmethod
    def failed(cls, error: str, wall_seconds: float | None = None) -> Response:
        """No answer, and why (already free of any credential)."""
        return cls("", 0, 0, False, 0.0, error=error, wall_seconds=wall_seconds)


class Responder(Protocol):
    name: str  # engine: "hf", "vllm" or "endpoint"
    model: str  # profile name, weights path or served model id, for the records' provenance
    gpu_count: int  # GPUs the responder holds (0 = CPU)

    def respond(self, conversations: Sequence[Messages], max_tokens: int) -> list[Response]: ...

    def close(self) -> None: ...
