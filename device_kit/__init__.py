"""The device kit: stages vLLM and every wheel a borrowed GPU machine lacks, for a machine that
cannot reach any registry. Run it from the repository root: `python -m device_kit --help`.

It lives here, outside scripts/, because it is tooling that carries the project to a GPU host,
not a benchmark; the benchmarks (scripts/bench_*.py and their helpers in scripts/benchlib/)
only use what it installs. The kit imports nothing from them.

- `cli`: the `resolve`, `build` and `plan` commands (`python -m device_kit`).
- `bundle`: split files into size-capped parts, a sha256 manifest, join and verify (runs on the
  device as a plain script, `python3 device_kit/bundle.py join`: standard library only).
- `wheels`: which vLLM release pins the device's torch, and which wheels the device lacks.
- `pipresolve`: the wheel closure, from pip's own resolver (metadata only).
- `assemble`: this project's wheel, the demo tokenizer's tarball, the vLLM wheel re-checked.
- `callplan`: the exact sequence of device `run` calls that carries and installs the kit.
"""
