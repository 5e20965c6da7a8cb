"""Which rows of a vLLM batch carry string caps, and which of them sit at a string's bound.

Why its own module, free of vLLM: vLLM's logits-processor interface hands over batch changes
(rows added, removed, moved, swapped) and each row's output token ids as a live list; keeping
that bookkeeping apart from the processor class lets it be tested on plain lists, and keeps
the processor (vllm/caps.py) a thin adapter that imports vLLM.

A request opts in through `SamplingParams.extra_args[CAPS_ARG]`: the {field: maxLength} map of
its schema (string_caps.string_limits). Requests without it are never looked at.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nexagauge_local.judge.string_caps import StringTracker

# The key under SamplingParams.extra_args, and the processor's fully qualified class name as
# `LLM(logits_processors=[...])` takes it (a module path, so spawned engine cores and
# data-parallel workers import it themselves).
CAPS_ARG = "nexagauge_string_caps"
PROCESSOR_FQCN = "nexagauge_local.judge.vllm.caps:StringCapsProcessor"
# vLLM's async scheduling appends this to a row's output list until the sampled id arrives.
PLACEHOLDER = -1


def caps_limits(extra_args: Mapping[str, Any] | None) -> dict[str, int] | None:
    """The string limits a request asked for, or None when it asked for none."""
    if not extra_args:
        return None
    limits = extra_args.get(CAPS_ARG)
    if limits is None:
        return None
    if not isinstance(limits, Mapping) or not all(
        isinstance(k, str) and isinstance(v, int) and v > 0 for k, v in limits.items()
    ):
        raise ValueError(f"extra_args[{CAPS_ARG!r}] must map field names to positive ints")
    return dict(limits)


@dataclass
class _Row:
    tracker: StringTracker
    output_ids: list[int]  # vLLM's own list: it grows as the request decodes
    seen: int = 0  # how many of output_ids the tracker has read


class CapRows:
    """The capped rows of one persistent batch, by row index."""

    def __init__(self) -> None:
        self._rows: dict[int, _Row] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def update(
        self,
        removed: Iterable[int],
        added: Iterable[tuple[int, dict[str, int] | None, list[int]]],
        moved: Iterable[tuple[int, int, bool]],
    ) -> None:
        """Apply one batch change in vLLM's order: removed, added, moved. `added` rows are
        (index, limits or None, live output ids); an added row replaces whatever held its
        index. `moved` rows are (from, to, swap): a one-way move leaves `from` empty."""
        for index in removed:
            self._rows.pop(index, None)
        for index, limits, output_ids in added:
            if limits:
                self._rows[index] = _Row(StringTracker(limits), output_ids)
            else:
                self._rows.pop(index, None)
        for a, b, swap in moved:
            row_a, row_b = self._rows.pop(a, None), self._rows.pop(b, None)
            if row_a is not None:
                self._rows[b] = row_a
            if swap and row_b is not None:
                self._rows[a] = row_b

    def at_bound(self, token_texts: Sequence[str]) -> list[int]:
        """Read each capped row's new output tokens; the rows whose next token must close
        the string they are in. Stops at a placeholder (async scheduling), which is read
        once it has been replaced by the sampled id."""
        out = []
        n_texts = len(token_texts)
        for index, row in self._rows.items():
            ids = row.output_ids
            while row.seen < len(ids):
                tok = ids[row.seen]
                if tok == PLACEHOLDER:
                    break
                row.tracker.feed(token_texts[tok] if 0 <= tok < n_texts else "")
                row.seen += 1
            if row.tracker.at_limit:
                out.append(index)
        return sorted(out)
