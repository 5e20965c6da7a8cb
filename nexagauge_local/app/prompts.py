"""What the judge would see: the exact messages and JSON schema of every request of one case.

An auditor has to be able to read what the judge was asked, and the cache keeps answers only.
This runs the real nodes over one case with the estimate's recording judge (no weights; a
guard family's judge lends its tokenizer only), so the printed requests are the ones `run` would send, byte for byte. Requests
of grounding, relevance and geval depend on earlier judge answers (claims, steps): here they
are built from the same stand-ins `estimate` uses, and each such request says so.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from nexagauge_local.app.errors import InputError, JudgeSetupError
from nexagauge_local.app.judge import check_node_models, judge_models, own_models
from nexagauge_local.app.run import OpenInput
from nexagauge_local.app.run_config import with_config
from nexagauge_local.case import Case
from nexagauge_local.dataset import Dataset, Duplicate
from nexagauge_local.estimate.recorder import PROXIED, RecordingJudge, estimate_registry
from nexagauge_local.events import NullEvents
from nexagauge_local.graph import GRAPH, judged_nodes, plan
from nexagauge_local.judge import (
    JudgeRequest,
    ProfileNotFound,
    WeightsMissing,
    resolve_profile,
    schema_id,
)
from nexagauge_local.judge.formats import guard_format
from nexagauge_local.judge.runtime import load_tokenizer, request_prompt
from nexagauge_local.nodes.base import NodeJudge
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
    judge_format: str = "rubric_json"
    prompt: str | None = None  # a guard family's prompt as its engine is fed it

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "judge_format": self.judge_format,
            **({"prompt": self.prompt} if self.prompt is not None else {}),
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

    llm_nodes = judged_nodes(plan(settings.target))
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
        judges = _judges(settings, llm_nodes)
        quiet = settings.model_copy(update={"output_dir": None, "progress": False})
        default = judges[settings.model][0] if settings.model in judges else RecordingJudge()
        own = {n: NodeJudge(p, lambda p=p: judges[p][0])  # type: ignore[misc]
               for n, p in own_models(settings, llm_nodes).items()}
        Runner(quiet, registry=estimate_registry(GRAPH), judge_factory=lambda: default,
               node_judges=own, events=NullEvents()).run(one)
    judged_by = judge_models(settings, llm_nodes)
    out = CasePrompts(chosen, settings.target)
    for name in llm_nodes:
        if node is not None and name != node:
            continue
        recorder, tokenizer = judges[judged_by[name]]
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
                    judge_format=recorder.judge_format,
                    prompt=_guard_prompt(tokenizer, req),
                )
            )
    return out


def _judges(settings: RunSettings, llm_nodes: Sequence[str]) -> dict[str, tuple[RecordingJudge, Any]]:
    """profile -> (a recorder asked as that profile's judge, its tokenizer or None). A rubric
    profile needs nothing but its file (as before: no weights); a guard family rendered
    through the weights' chat template needs the tokenizer, and its absence is a set-up error
    naming the profile and the path."""
    check_node_models(settings.node_models)
    out: dict[str, tuple[RecordingJudge, Any]] = {}
    for profile in dict.fromkeys(judge_models(settings, llm_nodes).values()):
        try:
            prof = resolve_profile(profile, require_weights=False)
        except ProfileNotFound as exc:
            raise JudgeSetupError(str(exc)) from None
        recorder = RecordingJudge.asking_as(prof)
        tokenizer = None
        fmt = guard_format(prof.judge_format)
        if fmt is not None and fmt.uses_chat_template:
            try:
                tokenizer = load_tokenizer(prof, settings.cache_dir)
            except WeightsMissing as exc:
                raise JudgeSetupError(f"{exc} (its tokenizer renders the "
                                      f"{prof.judge_format} prompt)") from None
        out[profile] = (recorder, tokenizer)
    return out


def _guard_prompt(tokenizer: Any, request: JudgeRequest) -> str | None:
    """The prompt text the engines feed for a guard request; None for a rubric one."""
    if request.guard is None:
        return None
    return request_prompt(tokenizer, request) if tokenizer is not None else request.guard.text
