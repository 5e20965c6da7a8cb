"""Judge weights on disk: a GGUF dequantised once and cached as safetensors (so a GGUF
is read once), cast copies per dtype, the folder an engine that cannot read GGUF loads, and the model and
tokenizer themselves. Saves are atomic, so a killed process never leaves a cache a later run
would load.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from nexagauge_local.judge.profiles import JudgeProfile

log = logging.getLogger(__name__)


def dequantised_dir(gguf: Path, cache_dir: Path) -> Path:
    """Disk cache folder for a GGUF's dequantised weights, keyed on path + size + mtime."""
    st = gguf.stat()
    key = hashlib.sha256(f"{gguf.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()
    return cache_dir / "dequantised" / key[:20]


def dequantised_ready(folder: Path) -> bool:
    return (folder / "config.json").exists() and any(folder.glob("*.safetensors"))


def ensure_dequantised(gguf: Path, cache_dir: Path) -> Path:
    """`gguf`'s float32 safetensors folder under `cache_dir`, dequantised on first use only:
    the conversion takes a minute or more, and every later load reads the cached copy."""
    folder = dequantised_dir(gguf, cache_dir)
    if not dequantised_ready(folder):
        log.info("dequantising %s once into %s", gguf.name, folder)
        dequantise_gguf(gguf, folder)
    return folder


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

    # Any: the quantisation markers cleared below are not declared attributes of the model
    # class in every transformers release the project allows
    model: Any = AutoModelForCausalLM.from_pretrained(
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

    from nexagauge_local.judge.runtime.attention import use_grouped_attention

    path = profile.weights_path()
    if path.suffix.lower() == ".gguf":
        path = cast_copy(ensure_dequantised(path, cache_dir), dtype)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
    # transformers wraps `to` with functools.wraps, so its annotation loses the bound self
    model.to(device).eval()  # type: ignore[arg-type]
    use_grouped_attention(model)
    return model, AutoTokenizer.from_pretrained(path)


def cast_copy(folder: Path, dtype: str) -> Path:
    """The dequantised weights saved once more in `dtype` (float32 is the folder itself).

    Loading the float32 files as bfloat16 holds both copies at once: the demo judge's load
    peaked at 1.15 GB for a 0.64 GB model, more than any judge run after it; from a bfloat16
    copy it peaks at 0.41 GB and loads 0.4 s faster (measured on the demo judge)."""
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


def engine_model_path(profile: JudgeProfile, cache_dir: Path, dtype: str = "float32") -> str:
    """The HF folder an engine that cannot read GGUF (vLLM) loads: the weights themselves, or
    for a GGUF profile its dequantised safetensors cache (built on first use), in `dtype` -
    the very files the hf backend loads, so both backends judge with the same weights."""
    path = profile.weights_path()
    if path.suffix.lower() != ".gguf":
        return str(path)
    return str(cast_copy(ensure_dequantised(path, cache_dir), dtype))
