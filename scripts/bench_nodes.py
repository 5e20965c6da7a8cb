"""Per-node judge work on the bundled sample: requests, backend calls, tokens, prefix sharing.

Runs `run eval` on the bundled sample (nexagauge_local/data/sample.jsonl) with the demo judge on
this host, with the cache off so every request is computed, and prints per LLM node:

- requests the nodes built and backend calls made (node-major batching: one call per node per
  shard, however many cases),
- prompt and output tokens (exact, from the judge's tokenizer),
- prefix sharing of the node's prompts: the share of prompt tokens that are the prefix common to
  ALL of the node's prompts, and the share a perfect prefix cache would reuse (1 - token-trie
  size / total), which is what the "rubric first, case fields last" layout is for,
- seconds spent in the node.

    python scripts/bench_nodes.py               # the whole bundled sample
    python scripts/bench_nodes.py --limit 8     # the first 8 records (a few minutes on 2 cores)
    python scripts/bench_nodes.py --limit 1 --target redteam   # one node and its ancestors

The demo judge's verdicts are not meaningful; this measures the work, not the quality.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

from benchlib.prefix import prefix_stats

from nexagauge_local.app.judge import open_client
from nexagauge_local.dataset import Dataset
from nexagauge_local.judge.runtime import prompt_ids
from nexagauge_local.judge.tapped import TappedJudge
from nexagauge_local.judge.types import JudgeRequest
from nexagauge_local.runner import Runner
from nexagauge_local.settings import RunSettings, default_cache_dir

SAMPLE = Path(__file__).resolve().parents[1] / "nexagauge_local" / "data" / "sample.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--limit", type=int, default=None, help="first N records of the sample")
    ap.add_argument("--model", default="demo", help="judge profile or weights path")
    ap.add_argument("--input", type=Path, default=SAMPLE)
    ap.add_argument("--target", default="eval",
                    help="node to run with its ancestors (default eval: every node)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        settings = RunSettings(
            target=args.target,
            output_dir=Path(tmp) / "out",
            limit=args.limit,
            model=args.model,
            backend="hf",
            use_cache=False,
            cache_dir=default_cache_dir(),
            progress=True,
        )
        # the real client, also keeping every request each node sent
        base = open_client(settings)
        sent: dict[str, list[JudgeRequest]] = {}
        client = TappedJudge(base, lambda node, reqs: sent.setdefault(node, []).extend(reqs))
        started = time.perf_counter()
        outcome = Runner(settings, judge_factory=lambda: client).run(
            Dataset(args.input, {}, args.limit)
        )
        wall = time.perf_counter() - started
        tokenizer = base.backend.tokenizer

    judge = outcome.summary["judge"] or {}
    print(
        f"bench_nodes: run {args.target} on {args.input.name} ({outcome.summary['cases']['valid']} cases), "
        f"judge {judge.get('model')} ({judge.get('backend')}, {judge.get('device')}), cache off"
    )
    print(
        f"host: {platform.machine()} {os.cpu_count()} CPU(s), {platform.python_version()}, "
        f"model load {judge.get('load_seconds', 0):.1f} s, whole run {wall:.1f} s"
    )
    head = (
        f"{'node':<12}{'requests':>9}{'calls':>7}{'prompt tok':>12}{'output tok':>12}"
        f"{'common pfx':>12}{'reusable':>10}{'seconds':>9}"
    )
    print(head)
    print("-" * len(head))
    for node, usage in outcome.summary["nodes"].items():
        node_sent = sent.get(node)
        if not node_sent:
            continue
        rows = [prompt_ids(tokenizer, r.messages) for r in node_sent]
        st = prefix_stats(rows)
        print(
            f"{node:<12}{usage['requests']:>9}{usage['backend_calls']:>7}{usage['input_tokens']:>12}"
            f"{usage['output_tokens']:>12}{st.common_share:>12.1%}{st.reusable_share:>10.1%}"
            f"{usage['wall_seconds']:>9.1f}"
        )
    print(
        "common pfx = share of the node's prompt tokens in the prefix ALL its prompts share; "
        "reusable = share a perfect prefix cache serves (1 - token-trie size / total)."
    )


if __name__ == "__main__":
    main()
