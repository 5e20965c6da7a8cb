"""Running attacker-driven attacks to the end, with nothing lost on a crash.

After every round the state of every live conversation is written to a checkpoint beside the
output (`OUTPUT.rounds.json`, replaced atomically) and every finished conversation's record is
appended to the output. A rerun skips the records already written and restores the live
conversations from the checkpoint, so after kill -9 or Ctrl-C finished rounds are not run
again; the checkpoint is removed once every conversation has ended.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexagauge_local.redteam.campaign.conversation import MODEL_STRATEGIES, Conversation
from nexagauge_local.redteam.campaign.rounds import Limits, Parties, play_round, stop_siblings
from nexagauge_local.redteam.campaign.static import attack_seed
from nexagauge_local.redteam.suites.probe_file import ProbeItem
from nexagauge_local.redteam.target.run import existing_ids, truncate_torn_tail

# (round, live conversations) -> a context that yields the round's progress callback
RoundProgress = Callable[[int, int], AbstractContextManager[Callable[[int], None]]]


@dataclass
class CampaignStats:
    conversations: int = 0
    skipped_existing: int = 0
    restored: int = 0
    rounds: int = 0
    successes: int = 0
    attacker_unparsed: int = 0
    engine_calls: dict[str, int] = field(default_factory=lambda: {"attacker": 0, "target": 0,
                                                                  "judge": 0})
    wall_seconds: float = 0.0


def plan_conversations(items: Sequence[ProbeItem], strategies: Sequence[str], limits: Limits,
                       seed: int) -> list[Conversation]:
    """One conversation per harmful probe and strategy (W streams for iterative-rewrite).
    Benign probes are not attacked by a model: an attacker driving a model to refuse a benign
    request measures the attacker, not the model's over-refusal."""
    convs = []
    for item in items:
        if item.record.get("probe", {}).get("expect", "refuse") != "refuse":
            continue
        for strategy in strategies:
            assert strategy in MODEL_STRATEGIES
            streams = limits.streams if strategy == "iterative-rewrite" else 1
            params: dict[str, str | int | float | bool] = (
                {"rounds": limits.rounds, "streams": streams} if strategy == "iterative-rewrite"
                else {"turns": limits.turns, "backtracks": limits.backtracks})
            for stream in range(streams):
                suffix = f"~{stream}" if streams > 1 else ""
                convs.append(Conversation(
                    case_id=f"{item.case_id}~{strategy}{suffix}", probe_case_id=item.case_id,
                    strategy=strategy,
                    stream=stream, params=params | ({"sample": stream} if streams > 1 else {}),
                    seed=attack_seed(seed, item.case_id, strategy)))
    return convs


def checkpoint_path(output: Path) -> Path:
    return output.with_name(output.name + ".rounds.json")


def _restore(convs: list[Conversation], path: Path) -> int:
    """Replace planned conversations by their checkpointed state; how many were restored."""
    if not path.exists():
        return 0
    try:
        saved = {c["case_id"]: c for c in json.loads(path.read_text(encoding="utf-8"))}
    except (json.JSONDecodeError, KeyError, TypeError):
        return 0  # a torn checkpoint: the rounds are run again
    restored = 0
    for i, conv in enumerate(convs):
        if conv.case_id in saved:
            convs[i] = Conversation.model_validate(saved[conv.case_id])
            restored += 1
    return restored


def _save(convs: Sequence[Conversation], path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps([c.model_dump(mode="json") for c in convs if not c.done]),
                   encoding="utf-8")
    os.replace(tmp, path)


def run_model_attacks(
    convs: list[Conversation],
    items: Sequence[ProbeItem],
    parties: Parties,
    limits: Limits,
    output: Path,
    *,
    resume: bool = True,
    on_round: RoundProgress | None = None,
) -> CampaignStats:
    """Play rounds until every conversation has ended; `on_round(r, live)` opens round r's
    progress (advanced by `live` after each of its three engine calls)."""
    started = time.perf_counter()
    stats = CampaignStats(conversations=len(convs))
    output.parent.mkdir(parents=True, exist_ok=True)
    ckpt = checkpoint_path(output)
    if not resume:
        output.unlink(missing_ok=True)
        ckpt.unlink(missing_ok=True)
    truncate_torn_tail(output)
    done = existing_ids(output)
    todo = [c for c in convs if c.case_id not in done]
    stats.skipped_existing = len(convs) - len(todo)
    stats.restored = _restore(todo, ckpt)
    by_id = {item.case_id: item for item in items}
    meta: dict[str, Any] = {"model": parties.target.model, "backend": parties.target.name,
                            "max_tokens": parties.max_tokens}
    written: set[str] = set()
    r = max((c.rounds for c in todo), default=0)
    with output.open("a", encoding="utf-8") as fh:
        while any(not c.done for c in todo):
            live = sum(not c.done for c in todo)
            with on_round(r, live) if on_round else nullcontext(None) as step:
                play_round(todo, by_id, parties, limits, step)
            stats.rounds += 1
            for role in stats.engine_calls:
                stats.engine_calls[role] += 1
            stop_siblings(todo)
            for conv in todo:
                if conv.done and conv.case_id not in written:
                    item = by_id[conv.probe_case_id]
                    fh.write(json.dumps(conv.record(item.record, item.prompt, meta),
                                        ensure_ascii=False) + "\n")
                    written.add(conv.case_id)
            fh.flush()
            os.fsync(fh.fileno())
            _save(todo, ckpt)
            r += 1
    ckpt.unlink(missing_ok=True)
    stats.successes = sum(c.success for c in todo)
    stats.attacker_unparsed = sum(c.attacker_unparsed for c in todo)
    stats.wall_seconds = time.perf_counter() - started
    return stats
