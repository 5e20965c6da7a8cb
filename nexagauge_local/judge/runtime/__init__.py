"""A model's runtime: devices and dtype, weights on disk, the tokenizer's view of a prompt.

Shared by the judge backends, the model-under-test responder and `estimate` (which needs a
tokenizer and never weights). Light to import: torch and transformers load inside the code that
needs them.
"""

from nexagauge_local.judge.runtime.devices import (
    HostGPUs,
    gpu_names,
    host_gpus,
    resolve_dtype,
    visible_device_ids,
    vllm_importable,
)
from nexagauge_local.judge.runtime.loadable import WeightsUnusable, check_loadable
from nexagauge_local.judge.runtime.tokens import (
    TokenCounter,
    count_prompt_tokens,
    eos_set,
    eos_token_ids,
    generation_eos_ids,
    prompt_ids,
    render_prompt,
    request_prompt,
    request_prompt_ids,
    token_pieces,
)
from nexagauge_local.judge.runtime.weights import (
    cast_copy,
    dequantised_dir,
    engine_model_path,
    ensure_dequantised,
    load_model,
    load_tokenizer,
)

__all__ = [
    "HostGPUs", "TokenCounter", "WeightsUnusable", "cast_copy", "check_loadable",
    "count_prompt_tokens", "dequantised_dir", "engine_model_path", "ensure_dequantised",
    "eos_set", "eos_token_ids", "generation_eos_ids", "gpu_names", "host_gpus",
    "load_model", "load_tokenizer", "prompt_ids", "render_prompt", "request_prompt",
    "request_prompt_ids", "resolve_dtype", "token_pieces", "visible_device_ids",
    "vllm_importable",
]
