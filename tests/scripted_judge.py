"""A scripted stand-in for the Judge protocol: canned, schema-valid answers, every call recorded.

Node logic is tested against this double, not a model: each request's answer is built from its
own schema (so a node that asks for the wrong shape fails validation here), optionally shaped by
a per-node responder. It mirrors JudgeClient.run's contract: results aligned with the requests,
`progress(n)` called with the number just completed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from nexagauge_local.judge.decision import JudgeDecision
from nexagauge_local.judge.ledger import CostLedger
from nexagauge_local.judge.schemas import schema_value
from nexagauge_local.judge.types import JudgeRequest, JudgeResult

Responder = Callable[[JudgeRequest], "dict[str, Any] | JudgeResult"]


def _canned(node: dict[str, Any]) -> Any:
    if node.get("type") == "string":
        return "canned text"
    if node.get("type") == "integer":
        return 1
    raise ValueError(f"cannot build a value for {node!r}")


def payload_for(schema: type[BaseModel], **overrides: Any) -> dict[str, Any]:
    """A minimal valid payload for `schema`; keys named in `overrides` (at any depth) take the
    given value, e.g. payload_for(verdict_schema(), verdict="UNSAFE")."""
    js = schema.model_json_schema()
    return schema_value(js, js.get("$defs", {}), _canned, overrides=overrides)


def user_text(request: JudgeRequest) -> str:
    return next(m["content"] for m in request.messages if m["role"] == "user")


@dataclass
class ScriptedJudge:
    prompt_tokens: int = 100
    output_tokens: int = 10
    gpu_seconds: float = 0.5
    responders: dict[str, Responder] = field(default_factory=dict)
    calls: list[tuple[str, list[JudgeRequest]]] = field(default_factory=list)
    is_demo: bool = False
    ledger: CostLedger = field(default_factory=CostLedger)  # stays empty, as a fake has no cost
    judge_format: str = "rubric_json"
    thresholds: dict[str, float] = field(default_factory=dict)
    decision: JudgeDecision | None = None  # no engine: the summary lists no GPUs

    def describe(self) -> dict[str, Any]:
        return {"model": "scripted", "demo": self.is_demo}

    def close(self) -> None:
        pass

    def on(self, node: str, responder: Responder) -> ScriptedJudge:
        self.responders[node] = responder
        return self

    def requests(self, node: str) -> list[JudgeRequest]:
        return [r for n, reqs in self.calls if n == node for r in reqs]

    def calls_for(self, node: str) -> int:
        return sum(1 for n, _ in self.calls if n == node)

    def run(
        self,
        node: str,
        requests: Sequence[JudgeRequest],
        progress: Callable[[int], None] | None = None,
    ) -> list[JudgeResult]:
        self.calls.append((node, list(requests)))
        out: list[JudgeResult] = []
        for req in requests:
            responder = self.responders.get(node)
            answer = responder(req) if responder else payload_for(req.schema)
            if isinstance(answer, JudgeResult):
                out.append(answer)
                continue
            parsed = req.schema.model_validate(answer)  # a wrong-shaped script fails loudly
            out.append(JudgeResult(
                parsed=parsed, raw_text=json.dumps(answer, separators=(",", ":")),
                prompt_tokens=self.prompt_tokens, output_tokens=self.output_tokens,
                gpu_seconds=self.gpu_seconds,
            ))
        if progress:
            progress(len(requests))
        return out


# ---------------------------------------------------------------- builders for node tests


def make_ctx(tmp_path: Any, judge: ScriptedJudge | None, **settings: Any) -> Any:
    """A RunContext over the scripted judge (None = no judge configured)."""
    from nexagauge_local.nodes.base import RunContext
    from nexagauge_local.settings import RunSettings

    return RunContext(
        settings=RunSettings(cache_dir=tmp_path, progress=False, **settings),
        embedder_factory=lambda: None,  # type: ignore[arg-type, return-value]
        judge_factory=(lambda: judge) if judge is not None else None,  # type: ignore[return-value]
    )


def make_case(case_id: str = "c1", output: str = "An answer.", **fields: Any) -> Any:
    """A Case; a keyword naming a record block of the pipeline's graph (geval=..., grounding=...)
    becomes that block, validated by its node's model (a dict or a model instance)."""
    from nexagauge_local.case import Case
    from nexagauge_local.graph import BLOCKS

    blocks = {k: BLOCKS[k].model_validate(fields.pop(k)) for k in list(fields) if k in BLOCKS}
    return Case(case_id=case_id, output=output, blocks=blocks, **fields)


def make_state(case_id: str = "c1", output: str = "An answer.", chunks: list[str] | None = None,
               **fields: Any) -> Any:
    """A CaseState; `chunks` adds a fake refiner artifact (vectors are never read downstream)."""
    import numpy as np

    from nexagauge_local.nodes.base import CaseState
    from nexagauge_local.nodes.refiner import Refined

    state = CaseState(make_case(case_id, output, **fields))
    if chunks is not None:
        state.artifacts["refiner"] = {
            "output": Refined(list(chunks), np.zeros((len(chunks), 4))),
            "reference": Refined([], np.zeros((0, 4))),
        }
    return state
