"""Judge weights and devices: the toolbox shared by the judge backends, the target responders,
the cluster executor and `estimate`.

Why one module: loading weights (GGUF dequantised once and cached as safetensors, DESIGN.md
section 7), picking a dtype, tokenising a chat prompt exactly as a backend feeds it, and knowing
which devices exist are needed by every engine that touches a model, and by `estimate` without
any weights at all. Nothing here imports torch or transformers at module level.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nexagauge_local.judge.profiles import JudgeProfile
from nexagauge_local.judge.types import Messages

log = logging.getLogger(__name__)


# ------------------------------------------------------------------ devices


def vllm_importable() -> bool:
    return importlib.util.find_spec("vllm") is not None


def gpu_visible() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def torch_device(gpus: Sequence[int]) -> str:
    """The torch device for a single-device engine: `cuda:N` for the first requested GPU, plain
    `cuda` when none was requested, `cpu` without a visible GPU. The GPU id travels as this
    string, never through CUDA_VISIBLE_DEVICES in the calling process."""
    if not gpu_visible():
        return "cpu"
    return f"cuda:{gpus[0]}" if gpus else "cuda"


def visible_device_ids(count: int) -> tuple[str, ...]:
    """The first `count` (at least one) GPU ids this process may use, for engines that were
    given no explicit ids: CUDA_VISIBLE_DEVICES as set for us (by Ray on a cluster worker, or
    by the user), else every GPU torch sees."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    ids = [v for v in visible.split(",") if v.strip()]
    if not ids:
        import torch

        ids = [str(i) for i in range(torch.cuda.device_count())]
    return tuple(ids[: max(count, 1)])


# ------------------------------------------------------------------ loading


def resolve_dtype(dtype: str, device: str, native_bf16: bool | None = None) -> str:
    """`auto` is bfloat16 on CUDA and on a CPU with native bf16 (AVX512-BF16 or AMX), float32
    on other CPUs, where bf16 matmuls are emulated and slow. The demo judge on such a CPU: peer
    sample redteam in 27.8 device-s instead of 59.3, peak RSS 1.25 GB instead of 1.56 GB.
    `native_bf16` None: read this host's /proc/cpuinfo."""
    if dtype != "auto":
        return dtype
    if device.startswith("cuda"):
        return "bfloat16"
    if native_bf16 is None:
        from nexagauge_local.embed import cpu_has_native_bf16

        native_bf16 = cpu_has_native_bf16()
    return "bfloat16" if native_bf16 else "float32"


def dequantised_dir(gguf: Path, cache_dir: Path) -> Path:
    """Disk cache folder for a GGUF's dequantised weights, keyed on path + size + mtime."""
    st = gguf.stat()
    key = hashlib.sha256(f"{gguf.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()
    return cache_dir / "dequantised" / key[:20]


def dequantised_ready(folder: Path) -> bool:
    return (folder / "config.json").exists() and any(folder.glob("*.safetensors"))


def load_tokenizer(profile: JudgeProfile, cache_dir: Path) -> Any:
    """The judge's tokenizer without its weights (for `estimate` and the cache key path)."""
    from transformers import AutoTokenizer

    path = profile.weights_path()
    if path.suffix.lower() == ".gguf":
        deq = dequantised_dir(path, cache_dir)
        if dequantised_ready(deq):
            return AutoTokenizer.from_pretrained(deq)
        return AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    return AutoTokenizer.from_pretrained(path)


def dequantise_gguf(gguf: Path, target: Path) -> None:
    """Load a GGUF (transformers dequantises it) and save plain fp32 safetensors + tokenizer.

    `save_pretrained` refuses a GGUF-loaded model ("quantized with gguf and is not
    serializable") until the quantisation markers are cleared. Saved to a temp folder and
    renamed, so a killed process never leaves a half-written cache that would be loaded later.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32
    )
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    model.is_quantized = False
    _save_atomically(model, tok, target)


def _save_atomically(model: Any, tokenizer: Any, target: Path) -> None:
    """Save to a temp folder and rename, so a killed process never leaves a half-written
    cache that would be loaded later."""
    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(tmp, target)
    except OSError:  # another process won the race; its copy is as good as ours
        shutil.rmtree(tmp, ignore_errors=True)


def load_model(profile: JudgeProfile, cache_dir: Path, dtype: str, device: str) -> tuple[Any, Any]:
    """(model, tokenizer) on `device`, going through the dequantised cache for GGUF files."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = profile.weights_path()
    if path.suffix.lower() == ".gguf":
        folder = dequantised_dir(path, cache_dir)
        if not dequantised_ready(folder):
            log.info("dequantising %s once into %s", path.name, folder)
            dequantise_gguf(path, folder)
        path = cast_copy(folder, dtype)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
    model.to(device).eval()
    return model, AutoTokenizer.from_pretrained(path)


def cast_copy(folder: Path, dtype: str) -> Path:
    """The dequantised weights saved once more in `dtype` (float32 is the folder itself).

    Loading the float32 files as bfloat16 holds both copies at once: the demo judge's load
    peaked at 1.15 GB for a 0.64 GB model, more than any judge run after it; from a bfloat16
    copy it peaks at 0.41 GB and loads 0.4 s faster (measured for issue 19)."""
    if dtype == "float32":
        return folder
    target = folder.with_name(f"{folder.name}-{dtype}")
    if dequantised_ready(target):
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype))
    _save_atomically(model, AutoTokenizer.from_pretrained(folder), target)
    return target


def render_prompt(tokenizer: Any, messages: Messages) -> str:
    """Apply the chat template. Templates without a system role (Mistral/Prometheus) reject a
    system turn; then the system text is merged into the first user turn."""
    try:
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    except Exception:  # jinja TemplateError raised by the template itself
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        rest = [dict(m) for m in messages if m["role"] != "system"]
        if not system or not rest:
            raise
        rest[0]["content"] = f"{system}\n\n{rest[0]['content']}"
        return tokenizer.apply_chat_template(rest, tokenize=False, add_generation_prompt=True)


def prompt_ids(tokenizer: Any, messages: Messages) -> list[int]:
    """Token ids of the chat-templated prompt, exactly as the backend feeds them."""
    return list(
        tokenizer(render_prompt(tokenizer, messages), add_special_tokens=False)["input_ids"]
    )


def count_prompt_tokens(tokenizer: Any, messages: Messages) -> int:
    return len(prompt_ids(tokenizer, messages))


def eos_set(tokenizer: Any, config_eos: int | list[int] | None) -> set[int]:
    """Every id that ends an answer: the tokenizer's EOS and the generation config's (Llama-3.1
    has two there). One set for the hf decode loop (which aligns the grammar to it) and vLLM's
    stop tokens, so both backends end answers on the same ids."""
    ids = {tokenizer.eos_token_id}
    ids.update(config_eos if isinstance(config_eos, list) else [config_eos])
    return {i for i in ids if i is not None}


def eos_token_ids(model: Any, tokenizer: Any) -> set[int]:
    """eos_set of a loaded model."""
    return eos_set(tokenizer, getattr(model.generation_config, "eos_token_id", None))


def generation_eos_ids(path: str | Path, tokenizer: Any) -> set[int]:
    """eos_set of a weights folder, without loading the weights (for vLLM's stop tokens)."""
    from transformers import GenerationConfig

    try:
        config_eos = GenerationConfig.from_pretrained(path).eos_token_id
    except OSError:  # no generation_config.json: the tokenizer's EOS alone
        config_eos = None
    return eos_set(tokenizer, config_eos)


class TokenCounter:
    """Tokenizer-only stand-in for a backend: exact prompt token counts, no weights loaded."""

    def __init__(self, profile: JudgeProfile, cache_dir: Path) -> None:
        self.profile = profile
        self.tokenizer = load_tokenizer(profile, cache_dir)

    def count_tokens(self, messages: Messages) -> int:
        return count_prompt_tokens(self.tokenizer, messages)


def engine_model_path(profile: JudgeProfile, cache_dir: Path, dtype: str = "float32") -> str:
    """The HF folder an engine that cannot read GGUF (vLLM) loads: the weights themselves, or
    for a GGUF profile its dequantised safetensors cache (built on first use), in `dtype` -
    the very files the hf backend loads, so both backends judge with the same weights."""
    path = profile.weights_path()
    if path.suffix.lower() != ".gguf":
        return str(path)
    folder = dequantised_dir(path, cache_dir)
    if not dequantised_ready(folder):
        dequantise_gguf(path, folder)
    return str(cast_copy(folder, dtype))
