"""vLLM's OpenAI server on this host's CPUs, started like the in-process judge's engine, for
the endpoint judge's real-server test and benchmark.

The server gets the in-process CPU engine's settings (judge/vllm/host.py, engine.py): eager
mode, an explicit KV cache, one process for engine and worker, every CPU bound, xgrammar with
`disable_any_whitespace`, a fixed seed, and the prefix cache off (as `vllm_prefix_caching =
false` in-process), so the two judge the same tokens with the same engine.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

GIB = 1 << 30


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_command(model_dir: str, port: int, *, dtype: str, max_model_len: int,
                  served_name: str, kv_cache_gib: float = 1.0,
                  grammar: str = "xgrammar") -> list[str]:
    structured = {"backend": grammar, "disable_any_whitespace": True}
    return [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model_dir,
        "--served-model-name", served_name, "--host", "127.0.0.1", "--port", str(port),
        "--dtype", dtype, "--max-model-len", str(max_model_len), "--seed", "0",
        "--enforce-eager", "--no-enable-prefix-caching",
        "--kv-cache-memory-bytes", str(int(kv_cache_gib * GIB)),
        "--distributed-executor-backend", "uni",
        "--structured-outputs-config", json.dumps(structured),
        "--disable-log-stats", "--uvicorn-log-level", "warning",
    ]


def server_env() -> dict[str, str]:
    """The in-process CPU engine's environment (vllm/host.py HostPlan.environment)."""
    cpus = sorted(os.sched_getaffinity(0))
    return {**os.environ, "VLLM_CPU_OMP_THREADS_BIND": ",".join(map(str, cpus)),
            "OMP_NUM_THREADS": str(len(cpus)), "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}


@contextmanager
def vllm_server(model_dir: str, log: Path, *, dtype: str = "float32", max_model_len: int = 4096,
                served_name: str = "demo-judge", startup_timeout: float = 900.0,
                grammar: str = "xgrammar") -> Iterator[str]:
    """The server's OpenAI base URL once GET /v1/models answers; stopped (its process group,
    which this function started) on exit. Its log goes to `log`."""
    port = free_port()
    cmd = serve_command(model_dir, port, dtype=dtype, max_model_len=max_model_len,
                        served_name=served_name, grammar=grammar)
    url = f"http://127.0.0.1:{port}/v1"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=server_env(),
                                start_new_session=True)
    try:
        started = time.monotonic()
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"vLLM's server exited ({proc.returncode}) before it served; "
                                   f"log: {log}\n{log.read_text()[-3000:]}")
            if time.monotonic() - started > startup_timeout:
                raise RuntimeError(f"vLLM's server did not serve within {startup_timeout:.0f}s; "
                                   f"log: {log}")
            try:
                if httpx.get(f"{url}/models", timeout=2.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1.0)
        yield url
    finally:
        stop_server(proc, term_s=60.0, kill_s=30.0)


def stop_server(proc: subprocess.Popen[bytes], term_s: float, kill_s: float) -> None:
    """SIGTERM the server's own process group (it was started in a new session), wait `term_s`
    for it to drain, then KILL the group: vLLM's engine workers are children of the server."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=term_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=kill_s)
