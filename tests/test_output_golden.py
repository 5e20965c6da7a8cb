"""Every file a run writes (case reports, metrics/<node>.json, summary.json, guard metrics,
attack tables, compare and gate reports) is byte for byte what tests/data/golden holds.

Why a test: these files are the tool's output format. The models that build them (results,
node summaries, headlines) may change shape inside the package, but a reordered key, a null
where a key used to be absent, or a float written differently would change what every reader
of an earlier run's folder sees. Timings, versions and temporary paths are masked
(tests/golden_runs.py); nothing else is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.golden_runs import BUILDERS, GOLDEN


def _golden(name: str) -> dict[str, str]:
    folder = GOLDEN / name
    return {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_written_files_match_the_golden_copies(name: str, tmp_path: Path) -> None:
    expected = _golden(name)
    produced = BUILDERS[name](tmp_path)
    assert sorted(produced) == sorted(expected)
    for rel, text in produced.items():
        assert text == expected[rel], f"{name}/{rel} differs from its golden copy"


def test_the_probe_headline_reads_back_typed_and_an_other_headline_as_written() -> None:
    """summary.json's redteam headline validates into ProbeHeadline and writes back the same
    bytes; a headline with a key the model does not know (an older or newer run's) is kept as
    it was written, not cut to the model's fields."""
    import json

    from nexagauge_local.redteam.outcomes.tables import ProbeHeadline
    from nexagauge_local.report.run_summary import RunSummary

    text = (GOLDEN / "redteam_probes" / "summary.json").read_text(encoding="utf-8")
    data = json.loads(text.replace('"<masked>"', "0.0"))
    data["versions"], data["started"] = {}, None
    summary = RunSummary.model_validate(data)
    assert summary.headlines is not None
    assert isinstance(summary.headlines["redteam"], ProbeHeadline)
    assert json.dumps(summary.to_dict()["headlines"]) == json.dumps(data["headlines"])
    data["headlines"]["redteam"]["a_later_rate"] = 0.5
    data["headlines"]["other_node"] = {"x": 1}
    again = RunSummary.model_validate(data).to_dict()["headlines"]
    assert again["redteam"]["a_later_rate"] == 0.5 and again["other_node"] == {"x": 1}
