"""Tools for proving the judge on a borrowed GPU machine that cannot reach any registry.

- `bundle`: split files into size-capped parts, a sha256 manifest, join and verify (runs on the
  device as a plain script: stdlib + pydantic only, no import of this package).
- `wheels`: which vLLM release pins the device's torch, and which wheels the device lacks.
- `callplan`: the exact sequence of device `run` calls that carries and installs the kit.
- `floor`, `workload`, `baseline`: the GPU benchmark's pure parts (compute floor arithmetic,
  the redteam node's real requests, the per-request OpenAI-style baseline).
"""
