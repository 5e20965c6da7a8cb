"""The `estimate` service: what `run TARGET` would do and cost, without loading weights.

Per node: how many cases are eligible and why the others are skipped; for LLM nodes the judge
requests, cache hits, exact prompt tokens and predicted output tokens and GPU-seconds
(estimate/plan.py). Only the judge's tokenizer is loaded.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nexagauge_local.app.cache import cache_errors
from nexagauge_local.app.errors import JudgeSetupError
from nexagauge_local.app.judge import (
    check_node_models,
    judge_models,
    resolve_judge,
    token_counter,
    with_model,
)
from nexagauge_local.app.run import OpenInput
from nexagauge_local.app.run_config import with_config
from nexagauge_local.dataset import Dataset
from nexagauge_local.estimate.plan import judge_estimates
from nexagauge_local.graph import judged_nodes, plan, predicted_eligibility
from nexagauge_local.records import RecordsError
from nexagauge_local.settings import RunSettings


@dataclass(frozen=True)
class NodeEstimate:
    name: str
    kind: str
    eligible: int
    skipped: dict[str, int]  # reason -> cases, in the order the reasons were first met
    judge: dict[str, Any] | None = None  # estimate_llm(...) + basis, for LLM nodes

    @property
    def is_llm(self) -> bool:
        return self.kind == "llm"


@dataclass(frozen=True)
class Estimate:
    target: str
    cases: int
    nodes: list[NodeEstimate]

    @property
    def judge_nodes(self) -> list[NodeEstimate]:
        return [n for n in self.nodes if n.judge is not None]

    def as_dict(self) -> dict[str, Any]:
        """The `estimate --json` document."""
        return {
            "target": self.target,
            "cases": self.cases,
            "nodes": {
                n.name: {
                    "kind": n.kind,
                    "eligible": n.eligible,
                    "skipped": dict(n.skipped),
                    **({"judge": n.judge} if n.judge is not None else {}),
                }
                for n in self.nodes
            },
        }


def estimate(settings: RunSettings, open_input: OpenInput) -> Estimate:
    """Estimate `settings.target` over the dataset `open_input` gives.

    Raises InputError when the input cannot be opened, RecordsError when a record is bad and
    on_error is "fail", JudgeSetupError when the judge's profile or weights are missing."""
    check_node_models(settings.node_models)
    specs = [s for s in plan(settings.target) if s.per_case]
    with tempfile.TemporaryDirectory() as tmp:
        dataset = with_config(open_input(Path(tmp)), settings)
        scan = dataset.scan()
        if scan.errors and settings.on_error == "fail":
            raise RecordsError(scan.errors)
        eligible: Counter[str] = Counter()
        reasons: dict[str, Counter[str]] = {s.name: Counter() for s in specs}
        for case in dataset.cases():
            for name, reason in predicted_eligibility(case, specs).items():
                if reason is None:
                    eligible[name] += 1
                else:
                    reasons[name][reason] += 1
        with cache_errors():
            judge = (_judge_estimates(dataset, settings) if judged_nodes(specs)
                     else {})
    return Estimate(
        target=settings.target,
        cases=scan.valid,
        nodes=[
            NodeEstimate(s.name, s.kind, eligible[s.name], dict(reasons[s.name]), judge.get(s.name))
            for s in specs
        ],
    )


def _judge_estimates(dataset: Dataset, settings: RunSettings) -> dict[str, dict[str, Any]]:
    """Resolve each judge (tokenizer only) and estimate the requests of the nodes it judges
    (`--model NODE=PROFILE`: each node's tokens, cache hits and seconds are its own judge's);
    a missing model is a JudgeSetupError naming where the weights should be (and the node)."""
    by_profile: dict[str, list[str]] = {}
    for node, profile in judge_models(settings, [s.name for s in plan(settings.target)]).items():
        by_profile.setdefault(profile, []).append(node)
    out: dict[str, dict[str, Any]] = {}
    for profile, nodes in by_profile.items():
        judged = with_model(settings, profile)
        try:
            factory = resolve_judge(judged)
        except JudgeSetupError as exc:
            if profile == settings.model:
                raise
            raise JudgeSetupError(", ".join(f"--model {n}={profile}" for n in nodes)
                                  + f": {exc}") from None
        counter = token_counter(factory)
        found = judge_estimates(dataset, judged, counter, factory.decision.fingerprint,
                                max_model_len=factory.profile.max_model_len,
                                profile=factory.profile)
        out.update({n: {**found[n], "profile": profile} for n in nodes if n in found})
    return out
