"""The report and the dataset pass stay bounded at any run size.

A memory ceiling would be timing- and host-fragile, so these tests assert the structure that
bounds memory: the report reads case files from a stream it never lists, keeps at most
MAX_LISTED views and WORST_N candidates whatever N is, and gives the same page whatever order
the files arrive in; the dataset keeps one int per case id.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from nexagauge_local.case_report import CaseReport
from nexagauge_local.dataset import Dataset, SeenIds
from nexagauge_local.graph import BLOCKS
from nexagauge_local.report import view_cases
from nexagauge_local.report.rundata import CaseFile, RunData
from nexagauge_local.report.view_cases import digest_cases


def _case(i: int, score: float | None, error: str | None = None) -> CaseFile:
    metric = {"name": "faithfulness", "score": score,
              "result": [{"passed": None if score is None else score >= 0.6}]}
    if error:
        metric = {"name": "faithfulness", "score": None, "error": error}
    report = {"input": {"case_id": f"c{i:03d}", "output": f"answer {i}"},
              "grounding": {"metrics": [metric]}}
    return CaseFile(f"c{i:03d}.json", CaseReport.model_validate(report))


def _cases(n: int) -> list[CaseFile]:
    rng = random.Random(3)
    return [_case(i, None, "judge failed") if i % 7 == 0 else _case(i, round(rng.random(), 3))
            for i in range(n)]


def test_digest_keeps_the_worst_cases_only_and_any_order_gives_the_same_page(monkeypatch) -> None:
    monkeypatch.setattr(view_cases, "MAX_LISTED", 6)
    cases = _cases(60)
    a = digest_cases(iter(cases), len(cases))
    b = digest_cases(iter(list(reversed(cases))), len(cases))
    assert a.total == b.total == 60
    assert [v.case_id for v in a.cases] == [v.case_id for v in b.cases]
    assert len(a.cases) == 6
    # worst first: failures by lowest score, then errors (none of those listed here: enough fails)
    scores = [(c.report.sections["grounding"]["metrics"][0].get("score"), c.report.case_id)
              for c in cases]
    fails = sorted((s, cid) for s, cid in scores if s is not None and s < 0.6)
    assert [v.case_id for v in a.cases] == [cid for _, cid in fails[:6]]
    worst = a.worst["grounding.faithfulness"]
    assert [(s, cid) for s, cid, _ in worst.lowest] == fails[: view_cases.WORST_N]
    assert all(anchor for _, _, anchor in worst.lowest)  # the lowest are listed, so linked
    assert worst.error_count == 9 and len(worst.errors) == view_cases.ERROR_EXAMPLES
    assert [cid for _, cid, _ in worst.errors] == ["c000", "c007", "c014"]
    assert all(anchor is None for _, _, anchor in worst.errors)  # errors rank after 6 fails
    counts = a.scores["grounding"]["faithfulness"]
    assert len(counts) == 60 - 9 and sum(counts.bins) == 60 - 9  # every score is in [0, 1]
    assert len(counts.bins) == 10 and counts == b.scores["grounding"]["faithfulness"]  # not N floats


def test_views_are_built_only_for_the_listed_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    """A drill-down view is about 5.7 KB of objects: the runner's digester keeps a candidate
    as its JSON text and builds views only for the cases the page lists, so the case loop
    does not hold 2 * MAX_LISTED views, and a large run does not build views it throws away."""
    monkeypatch.setattr(view_cases, "MAX_LISTED", 6)
    built: list[str] = []
    real = view_cases.case_view

    def counting(case: CaseFile, rows: list, budget: int,
                 panels: dict = view_cases.CASE_PANELS) -> view_cases.CaseView:
        built.append(case.filename)
        return real(case, rows, budget, panels)

    cases = _cases(60)
    expected = digest_cases(iter(cases), len(cases))
    built.clear()
    monkeypatch.setattr(view_cases, "case_view", counting)
    digester = view_cases.CaseDigester(len(cases))
    for case in cases:
        text = json.dumps(case.report.to_dict())
        digester.add(CaseFile(case.filename, CaseReport.from_json(text)), text)
        assert not built  # nothing built while the cases come
    assert digester.result() == expected  # as text or as dicts: the same digest
    assert sorted(built) == sorted(v.filename for v in expected.cases)


def test_report_streams_case_files_without_listing_them(tmp_path: Path, monkeypatch) -> None:
    from nexagauge_local.report.html import render_html

    (tmp_path / "case_report").mkdir()
    for case in _cases(30):
        (tmp_path / "case_report" / case.filename).write_text(json.dumps(case.report.to_dict()))
    (tmp_path / "summary.json").write_text(json.dumps({"target": "grounding", "cases": {"valid": 30}}))
    monkeypatch.setattr(view_cases, "MAX_LISTED", 4)

    def no_listing(self: RunData) -> list[Path]:
        raise AssertionError("the report must not hold every case file name")

    monkeypatch.setattr(RunData, "case_paths", no_listing)
    run = RunData(tmp_path, json.loads((tmp_path / "summary.json").read_text()))
    assert run.count_cases() == 30
    html = render_html(run)
    assert "4 case(s) of 30" in html and "The other 26 case(s)" in html


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_duplicates_name_the_first_record_from_the_compact_index(tmp_path: Path, fmt: str) -> None:
    rows = [{"case_id": "a", "output": "x"}, {"case_id": "b", "output": "y"},
            {"case_id": "a", "output": "x"}, {"case_id": "b", "output": "changed"}]
    path = tmp_path / f"d.{fmt}"
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        path.write_text(json.dumps(rows))
    scan = Dataset(path, blocks=BLOCKS).scan()
    assert scan.valid == 2 and len(scan.duplicates) == 1 and len(scan.errors) == 1
    first = "d.jsonl:1" if fmt == "jsonl" else "d.json[0]"
    assert scan.duplicates[0].as_dict()["first_seen"].endswith(first)
    second = f"{path}:2" if fmt == "jsonl" else f"{path}[1]"
    assert f"'b' already used at {second} with different content" in str(scan.errors[0])


@pytest.mark.parametrize("max_run", [1 << 18, 8])
def test_seen_ids_are_compacted_into_sorted_arrays(monkeypatch: pytest.MonkeyPatch, max_run: int) -> None:
    """The id index holds a bounded dict; older ids live in numpy arrays (24 bytes a case),
    in runs that merge like a binary counter (every run is _COMPACT * 2**level long) until
    they reach _MAX_RUN, which are kept apart and never merged again."""
    from nexagauge_local.case import Case, SourceRef

    monkeypatch.setattr(SeenIds, "_COMPACT", 4)
    monkeypatch.setattr(SeenIds, "_MAX_RUN", max_run)
    seen = SeenIds()
    cases = [Case(case_id=f"id-{i}", output=f"o{i}") for i in range(27)]
    for i, case in enumerate(cases):
        assert case.case_id not in seen
        seen.add(case, SourceRef(file="f", line=i + 1) if i % 2 else SourceRef(file="f", index=i))
    # 27 ids = 3 recent + 6 runs of 4: levels 1 (8 ids) and 2 (16 ids), or three full runs of 8
    assert len(seen) == 27 and len(seen._recent) == 3
    levels = [None if run is None else len(run[0]) for run in seen._levels]
    assert (levels, [len(run[0]) for run in seen._full]) == (
        ([None, 8, 16], []) if max_run > 27 else ([None], [8, 8, 8]))
    for run in (*seen._levels, *seen._full):
        if run is not None:
            assert run[0].dtype.itemsize == 8 and list(run[0]) == sorted(run[0])
    for i, case in enumerate(cases):  # found whether compacted or recent, position intact
        assert case.case_id in seen and seen.same_content(case)
        assert not seen.same_content(case.model_copy(update={"output": "other"}))
        assert str(seen.first(case.case_id, "f")) == (f"f:{i + 1}" if i % 2 else f"f[{i}]")
    assert "id-27" not in seen and "" not in seen


def test_node_stats_keep_each_score_once_in_fixed_blocks_with_exact_summaries(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Scores live once, per metric, in blocks that never grow past BLOCK, every full one in a
    temporary file; the node's mean and median over every metric equal statistics' on the same
    values (odd and even counts)."""
    import statistics

    from nexagauge_local.report.stats import NodeStats, ScoreColumn
    from nexagauge_local.results import MetricResult, NodeReport

    monkeypatch.setattr(ScoreColumn, "BLOCK", 4)
    rng = random.Random(5)
    for n in (9, 10):
        stats = NodeStats("refmatch")
        a_scores = [round(rng.random(), 3) for _ in range(n)]
        b_scores = [round(rng.random(), 3) for _ in range(n)]
        for a, b in zip(a_scores, b_scores, strict=True):
            stats.add_report(NodeReport(metrics=[MetricResult(name="a", category="lexical", score=a),
                                                 MetricResult(name="b", category="lexical", score=b)]))
        stats.add_report(NodeReport(metrics=[MetricResult(name="a", category="lexical", score=None, error="boom")]))
        assert not hasattr(stats, "scores")  # no second copy of every score per node
        column = stats.metrics["a"].scores
        assert [len(b) for b in column.blocks()] == [4] * (n // 4) + ([n % 4] if n % 4 else [])
        assert len(column._block) < 4 and column._spilled == 4 * (n // 4)  # full blocks on disk
        assert list(zip(column, column, strict=True)) == [(x, x) for x in a_scores]  # reads interleave
        summary = stats.summary().to_json()
        both = a_scores + b_scores
        assert summary["avg_score"] == statistics.fmean(both)
        assert summary["median_score"] == statistics.median(both)
        metric_a = summary["metrics"]["a"]
        assert metric_a["median"] == statistics.median(a_scores)
        assert (metric_a["n"], metric_a["errors"], metric_a["min"], metric_a["max"]) == (
            n + 1, 1, min(a_scores), max(a_scores))
    empty = NodeStats("x").summary().to_json()
    assert empty["avg_score"] is None and empty["median_score"] is None


def test_the_case_loop_hands_each_shards_pages_back_once_its_states_are_gone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After every shard the runner asks glibc for its free pages back, at a point where no
    CaseState of that shard is reachable any more (else there would be nothing to release)."""
    import gc

    import nexagauge_local.runner as runner_mod
    from nexagauge_local.libc import release_free_pages
    from nexagauge_local.nodes.base import CaseState
    from nexagauge_local.runner import Runner
    from nexagauge_local.settings import RunSettings

    assert release_free_pages() is True  # glibc here; a no-op elsewhere
    rows = [{"case_id": f"c{i}", "output": f"the cat sat on mat {i}", "reference": "the cat sat"}
            for i in range(7)]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    alive_at_release: list[int] = []

    def spy() -> bool:
        gc.collect()
        alive_at_release.append(sum(isinstance(o, CaseState) for o in gc.get_objects()))
        return True

    monkeypatch.setattr(runner_mod, "release_free_pages", spy)
    settings = RunSettings(target="refmatch", output_dir=tmp_path / "out", cache_dir=tmp_path / "c",
                           progress=False, shard_size=3)
    Runner(settings, render_report=False).run(Dataset(data))
    assert alive_at_release == [0, 0, 0]  # 7 cases in shards of 3: three shards
    assert len(list((tmp_path / "out" / "case_report").iterdir())) == 7


def test_the_runs_digest_is_the_one_the_case_files_give(tmp_path: Path) -> None:
    """The runner digests each case report as it writes it (report/writer.CaseSink), so
    report.html need not read the files back: that digest must be the one the files give, and
    a folder that no longer holds exactly those cases is read again instead."""
    from nexagauge_local.report.html import build_context, environment, render_html
    from nexagauge_local.report.rundata import load_run
    from nexagauge_local.runner import Runner
    from nexagauge_local.settings import RunSettings

    sample = Path(__file__).resolve().parents[1] / "nexagauge_local" / "data" / "sample.jsonl"
    out = tmp_path / "out"
    settings = RunSettings(target="refmatch", output_dir=out, cache_dir=tmp_path / "cache",
                           progress=False)
    outcome = Runner(settings).run(Dataset(sample))
    run = load_run(out)
    n = run.count_cases()
    assert outcome.digest is not None and outcome.digest.total == n > 10
    assert outcome.digest == digest_cases(run.iter_cases(ordered=False), n)
    stamp = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")  # when it was rendered
    assert (stamp.sub("T", render_html(run, digest=outcome.digest))
            == stamp.sub("T", render_html(run)))

    worst = outcome.digest.cases[0]
    (out / "case_report" / worst.filename).unlink()  # the folder changed after the run
    seen: list[int] = []
    context = build_context(environment(), run, progress=seen.append, digest=outcome.digest)
    assert context["cases"]["total"] == n - 1 and len(seen) == n - 1  # read again, one by one
    assert worst.case_id not in {v.case_id for v in context["cases"]["views"]}
