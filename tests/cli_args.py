"""Command lines the CLI tests share: the judge options for the tiny local judge, and a `run`
of one target on one input. Options go in any order to click, so extra ones are appended."""

from __future__ import annotations

from pathlib import Path


def judge_opts(model: Path | str, cache: Path) -> list[str]:
    """The judge weights, the hf backend and the cache folder."""
    return ["--model", str(model), "--backend", "hf", "--cache-dir", str(cache)]


def run_args(
    target: str, data: Path, out: Path, model: Path | str, cache: Path, *extra: str
) -> list[str]:
    """`run TARGET` on `data` into `out`, quietly, on the local judge, then `extra`."""
    files = ["--input", str(data), "--output-dir", str(out), "-q"]
    return ["run", target, *files, *judge_opts(model, cache), *extra]
