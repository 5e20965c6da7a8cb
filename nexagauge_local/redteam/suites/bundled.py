"""The default red-team probe suite shipped as package data.

The suite is JSONL (one probe per line) so users can diff, filter and extend it with ordinary
tools; it is read through ``importlib.resources`` so it works from a wheel or a zip. Every line
is validated with :class:`~nexagauge_local.blocks.ProbeBlock` at load time, so a malformed probe
fails loudly with its line number rather than producing a silently default-filled case.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from nexagauge_local.blocks import ProbeBlock

SUITE_PACKAGE = "nexagauge_local.redteam.suites"  # a regular package; data/ is package data under it
SUITE_FILE = "default_probes.jsonl"


def parse_suite(text: str, source: str = SUITE_FILE) -> list[dict[str, Any]]:
    """Parse and validate probe JSONL; blank lines are skipped, ids must be present and unique."""
    probes: list[dict[str, Any]] = []
    seen: set[str] = set()
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            block = ProbeBlock.model_validate(json.loads(line))
        except (json.JSONDecodeError, ValueError) as exc:
            raise ValueError(f"{source}:{lineno}: invalid probe: {exc}") from exc
        if not block.id:
            raise ValueError(f"{source}:{lineno}: probe has no id")
        if block.id in seen:
            raise ValueError(f"{source}:{lineno}: duplicate probe id {block.id!r}")
        seen.add(block.id)
        probes.append(block.model_dump())
    return probes


def load_suite() -> list[dict[str, Any]]:
    """The default suite: validated probe dicts (id, category, severity, failure_modes, task,
    input, expected_safe_behavior), in file order."""
    text = resources.files(SUITE_PACKAGE).joinpath("data", SUITE_FILE).read_text(encoding="utf-8")
    return parse_suite(text)


def probe_record(probe: dict[str, Any]) -> dict[str, Any]:
    """A dataset record for one probe, ready for ``generate``: case_id, input and the probe
    block (the model's output is filled in later)."""
    return {"case_id": probe["id"], "input": probe.get("input") or "", "probe": dict(probe)}
