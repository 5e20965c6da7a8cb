"""The benchmarks' shared pure parts (scripts/bench_*.py import them; scripts/ is on their path).

- `floor`, `workload`, `baseline`, `benchreport`: the GPU benchmark's pure parts (compute
  floor arithmetic, the redteam node's real requests, the per-request OpenAI-style baseline,
  the report's tables).
- `phases`, `gpuprobe`: bench_gpu.py's phases and the GPU's measured rates.
- `parity`: bench_parity.py's comparison of this tool against nexa-gauge.
- `schema_proxy`: the OpenAI-compatible proxy bench_peer.py puts in front of a llama server.
- `claims_v1`: the claims node's first prompt, kept for bench_claims.py's comparison.
- `scratch`: a temporary work folder removed when the benchmark ends.

Installing vLLM on an offline GPU host is the product's own command, `nexagauge-local bundle`.
"""
