"""Can these judge weights load? Answered cheaply, before a run reads a single record.

Why: a --model that names an empty folder, a folder without weights, a random file renamed
.gguf or a dataset file would otherwise fail inside the backend on the first request, so every
metric of the run became "judge failed" after minutes of work. Reading config.json (with
transformers' own AutoConfig, so "is this a model transformers knows" has the library's
answer), looking for weight files and checking a GGUF header costs milliseconds; loading the
weights is left to the run.
"""

from __future__ import annotations

import struct
from pathlib import Path

from nexagauge_local.judge.profiles import JudgeProfile

GGUF_MAGIC = b"GGUF"
GGUF_VERSIONS = (1, 2, 3)
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
FIX = ("pass --model a weights folder (config.json, tokenizer files, *.safetensors), a .gguf "
       "file or a profile name (see `nexagauge-local models`)")


class WeightsUnusable(ValueError):
    """The weights are there but cannot be a judge; the message names the problem and the fix."""


def check_loadable(profile: JudgeProfile) -> None:
    """Raise WeightsUnusable (or WeightsMissing) unless the profile's weights look loadable."""
    path = profile.weights_path()
    problem = _gguf_problem(path) if path.is_file() else _folder_problem(path)
    if problem:
        raise WeightsUnusable(f"judge model {path}: {problem}; {FIX}")


def _gguf_problem(path: Path) -> str | None:
    if path.suffix.lower() != ".gguf":
        return "a file that is not a model (only .gguf files are judge weights on their own)"
    with path.open("rb") as fh:
        head = fh.read(8)
    if len(head) < 8 or head[:4] != GGUF_MAGIC:
        return "not a GGUF file (bad header)"
    (version,) = struct.unpack("<I", head[4:8])
    if version not in GGUF_VERSIONS:
        return f"GGUF version {version} is not one this tool reads ({GGUF_VERSIONS})"
    return None


def _folder_problem(path: Path) -> str | None:
    if not (path / "config.json").is_file():
        return "no config.json in the folder" + (" (the folder is empty)" if _empty(path) else "")
    try:
        from transformers import AutoConfig

        AutoConfig.from_pretrained(str(path), local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - any failure means "not a model config"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"config.json is not a model config ({first[:160]})"
    if not any(p.suffix in WEIGHT_SUFFIXES for p in path.iterdir()):
        return "no weight files (*.safetensors or *.bin) next to config.json"
    return None


def _empty(path: Path) -> bool:
    return not any(path.iterdir())
