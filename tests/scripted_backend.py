"""A scripted stand-in for a judge Backend, for tests that need the real JudgeClient in front.

Tests of caching, re-scoring and run configuration go through JudgeClient (cache, ledger,
deduplication); only the model is replaced. Each request is answered with `answer(request)`,
validated against its own schema, so a wrong-shaped script fails loudly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from nexagauge_local.judge.types import JudgeRequest, JudgeResult, OnBatch
from tests.scripted_judge import payload_for


class ScriptedBackend:
    name = "scripted"
    fingerprint = "scripted@test"
    gpu_count = 0
    load_seconds = 0.0
    prompt_tokens = 50  # per request, and what count_tokens says of any prompt
    output_tokens = 10

    def answer(self, request: JudgeRequest) -> dict[str, Any]:
        """The payload for `request`: a minimal valid one unless a test says otherwise."""
        return payload_for(request.schema)

    def generate(
        self, requests: Sequence[JudgeRequest], on_batch: OnBatch | None = None
    ) -> list[JudgeResult]:
        out = []
        for req in requests:
            answer = self.answer(req)
            out.append(JudgeResult(parsed=req.schema.model_validate(answer),
                                   raw_text=json.dumps(answer), prompt_tokens=self.prompt_tokens,
                                   output_tokens=self.output_tokens, gpu_seconds=0.01))
        return out

    def count_tokens(self, messages: object) -> int:
        return self.prompt_tokens

    def close(self) -> None:
        pass
