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


class Responder(Protocol):
    name: str  # engine: "hf" or "vllm"
    model: str  # profile name or weights path, for provenance in the written records
    gpu_count: int  # GPUs the responder holds (0 = CPU)

    def respond(self, conversations: Sequence[Messages], max_tokens: int) -> list[Response]: ...

    def close(self) -> None: ...
