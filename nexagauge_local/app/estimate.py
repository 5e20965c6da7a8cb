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
from nexagauge_local.app.judge import resolve_judge, token_counter
from nexagauge_local.app.run import OpenInput
from nexagauge_local.dataset import Dataset
from nexagauge_local.estimate.plan import judge_estimates
from nexagauge_local.graph import plan, predicted_eligibility
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
    specs = [s for s in plan(settings.target) if s.per_case]
    with tempfile.TemporaryDirectory() as tmp:
        dataset = open_input(Path(tmp))
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
            judge = (_judge_estimates(dataset, settings) if any(s.kind == "llm" for s in specs)
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
    """Resolve the judge (tokenizer only) and estimate its requests; a missing model is a
    JudgeSetupError naming where the weights should be."""
    factory = resolve_judge(settings)
    counter = token_counter(factory)
    return judge_estimates(dataset, settings, counter, factory.fingerprint,
                           max_model_len=factory.profile.max_model_len)
