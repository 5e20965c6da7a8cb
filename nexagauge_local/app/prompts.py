"""What the judge would see: the exact messages and JSON schema of every request of one case.

An auditor has to be able to read what the judge was asked, and the cache keeps answers only.
This runs the real nodes over one case with the estimate's recording judge (no weights, no
tokenizer), so the printed requests are the ones `run` would send, byte for byte. Requests
of grounding, relevance and geval depend on earlier judge answers (claims, steps): here they
are built from the same stand-ins `estimate` uses, and each such request says so.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from nexagauge_local.app.errors import InputError
from nexagauge_local.app.run import OpenInput
from nexagauge_local.app.run_config import with_config
from nexagauge_local.case import Case
from nexagauge_local.dataset import Dataset, Duplicate
from nexagauge_local.estimate.recorder import PROXIED, RecordingJudge, estimate_registry
from nexagauge_local.events import NullEvents
from nexagauge_local.graph import GRAPH, plan
from nexagauge_local.judge import schema_id
from nexagauge_local.records import RecordError, RecordsError
from nexagauge_local.settings import RunSettings


@dataclass
class PromptRequest:
    node: str
    prompt_version: str
    messages: list[dict[str, str]]
    schema_name: str
    schema_id: str
    json_schema: dict[str, Any]
    max_tokens: int
    stand_in: str | None  # what the request was built from when not a real judge answer

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "prompt_version": self.prompt_version,
            "max_tokens": self.max_tokens,
            "schema": {"name": self.schema_name, "id": self.schema_id, "json_schema": self.json_schema},
            "built_from_stand_in": self.stand_in,
            "messages": self.messages,
        }


@dataclass
class CasePrompts:
    case_id: str
    target: str
    requests: list[PromptRequest] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"case_id": self.case_id, "target": self.target,
                "requests": [r.as_dict() for r in self.requests]}


@dataclass
class _OneCase(Dataset):
    """The dataset narrowed to one case id: the runner sees only that case."""

    only: str = ""

    def items(self) -> Iterator[Case | RecordError | Duplicate]:
        for item in super().items():
            if isinstance(item, Case) and item.case_id == self.only:
                yield item


def case_prompts(
    settings: RunSettings, open_input: OpenInput, case_id: str | None, node: str | None
) -> CasePrompts:
    """The judge requests of `case_id` (default: the first valid case) under `settings.target`,
    optionally only those of `node`. Raises InputError for an unknown case or a node the
    target does not plan, RecordsError for bad records when on_error is "fail"."""
    from nexagauge_local.runner import Runner

    llm_nodes = [s.name for s in plan(settings.target) if s.kind == "llm"]
    if node is not None and node not in llm_nodes:
        asks = ", ".join(llm_nodes) or "none"
        raise InputError(f"--node {node}: not a judge node of {settings.target} (its judge nodes: {asks})")
    with tempfile.TemporaryDirectory() as tmp:
        dataset = with_config(open_input(Path(tmp)), settings)
        scan = dataset.scan()
        if scan.errors and settings.on_error == "fail":
            raise RecordsError(scan.errors)
        chosen = next((c.case_id for c in dataset.cases() if case_id in (None, c.case_id)), None)
        if chosen is None:
            raise InputError(f"{dataset.name}: no valid case with case_id {case_id!r}")
        one = _OneCase(**{f.name: getattr(dataset, f.name) for f in fields(Dataset)},
                       only=chosen)
        recorder = RecordingJudge()
        quiet = settings.model_copy(update={"output_dir": None, "progress": False})
        Runner(quiet, registry=estimate_registry(GRAPH), judge_factory=lambda: recorder,
               events=NullEvents()).run(one)
    out = CasePrompts(chosen, settings.target)
    for name in llm_nodes:
        if node is not None and name != node:
            continue
        for req in recorder.requests.get(name, []):
            out.requests.append(
                PromptRequest(
                    node=name,
                    prompt_version=req.prompt_version,
                    messages=[dict(m) for m in req.messages],
                    schema_name=req.schema.__name__,
                    schema_id=schema_id(req.schema),
                    json_schema=req.schema.model_json_schema(),
                    max_tokens=req.max_tokens,
                    stand_in=f"stand-in {PROXIED[name]}" if name in PROXIED else None,
                )
            )
    return out
