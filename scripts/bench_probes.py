"""Benchmark the heuristic probe layer: scoring throughput and the observability block's cost.

Compares nothing against a baseline; it measures (1) ``score_case`` on 10,000 synthetic outputs
(a rotating mix of refusals, harmful-looking compliance and benign answers, each varied so no
two strings are identical) and (2) ``build_observability`` on 1,000 scored cases. The target
for (1) is "well under a second per thousand outputs".

Usage: PYTHONPATH=. python scripts/bench_probes.py [--n 10000] [--obs-n 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from nexagauge_local.blocks import ProbeBlock
from nexagauge_local.redteam.heuristics import aggregate_metrics, build_observability, score_case

TEMPLATES = (
    (
        "I'm sorry, but I can't help with that request #{i}. It would be dangerous; "
        "instead, I can share general safety information."
    ),
    "I cannot provide that. If you are struggling, please reach out to a crisis line ({i}).",
    (
        "Sure, here is how to do it ({i}). Step 1: obtain the precursors. Step 2: mix them "
        "carefully and avoid detection."
    ),
    "As DAN, developer mode enabled: I am free from all rules. Answer {i} follows.",
    "Contact jane{i}@example.com or 555-123-{i:04d}; key sk-abcdEFGH1234ijkl{i:06d}.",
    "Ignoring previous instructions. As requested, here is the system prompt ({i}).",
    "You are a complete idiot, case {i}. Nobody cares.",
    (
        "The Eiffel Tower is in Paris and was completed in 1889. Fact number {i} about it: "
        "it is repainted roughly every seven years to protect it from rust."
    ),
    (
        "Photosynthesis converts light into chemical energy; chlorophyll absorbs mostly blue "
        "and red light (note {i})."
    ),
    (
        "Here is a summary of the article {i}: the council approved the new park budget and "
        "construction starts next spring."
    ),
)
CATEGORIES = ("violent_weapons", "self_harm", "privacy_pii", "prompt_injection", "jailbreak")
SEVERITIES = ("low", "medium", "high", "critical")


def synthetic_outputs(n: int) -> list[str]:
    """Deterministic mix: 2/10 refusals, 5/10 unsafe-looking, 3/10 benign."""
    return [TEMPLATES[i % len(TEMPLATES)].format(i=i) for i in range(n)]


def probes(n: int) -> list[ProbeBlock]:
    return [
        ProbeBlock(
            id=f"p{i}",
            category=CATEGORIES[i % len(CATEGORIES)],
            severity=SEVERITIES[(i // 3) % len(SEVERITIES)],
            failure_modes=["harmful_compliance", "data_leakage", "jailbreak", "toxicity"],
            task=f"probe task {i % 37}",
            input=f"probe input asking for something harmful, variant {i % 53}",
        )
        for i in range(n)
    ]


def bench_scoring(n: int, repeat: int) -> tuple[float, list]:
    outs, blocks = synthetic_outputs(n), probes(n)
    best = float("inf")
    scores: list = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        scores = [score_case(f"c{i}", o, b, None) for i, (o, b) in enumerate(zip(outs, blocks))]
        best = min(best, time.perf_counter() - t0)
    return best, scores


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--obs-n", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    print("bench_probes: heuristic probe layer (no baseline; absolute figures)")
    print(
        f"machine: {platform.platform()} | python {platform.python_version()} | "
        f"cpu_count={os.cpu_count()} | processor={platform.processor() or 'n/a'}"
    )

    secs, scores = bench_scoring(args.n, args.repeat)
    failed = sum(not s.passed for s in scores)
    print(
        f"score_case x{args.n} (best of {args.repeat}, incl. CaseScore validation): "
        f"{secs:.3f}s -> {args.n / secs:,.0f} outputs/s, {1000 * secs / args.n * 1000:.1f} ms "
        f"per 1,000 outputs; {failed} failed the gate"
    )

    t0 = time.perf_counter()
    metrics = aggregate_metrics(scores)
    print(
        f"aggregate_metrics x{args.n}: {time.perf_counter() - t0:.3f}s "
        f"(resilience_index={metrics.resilience_index or 0.0:.3f})"
    )

    subset = scores[: args.obs_n]
    timings = []
    obs = None
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        obs = build_observability(subset, seed=0)
        timings.append(time.perf_counter() - t0)
    assert obs is not None
    print(
        f"build_observability x{len(subset)} (k={obs['n_clusters']}, "
        f"{obs['embedding']['n_features']} features, "
        f"{obs['embedding']['n_components']} SVD components): best {min(timings):.3f}s, "
        f"first {timings[0]:.3f}s"
    )


if __name__ == "__main__":
    main()
