"""report.html: self-contained, every section present, untrusted text escaped, large runs bounded."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from nexagauge_local.cli import main
from nexagauge_local.dataset import Dataset
from nexagauge_local.events import NullEvents
from nexagauge_local.report import html as report_html
from nexagauge_local.report.highlight import highlight, span_intervals
from nexagauge_local.runner import Runner
from nexagauge_local.settings import RunSettings
from scripts.bench_report import build_synthetic
from tests.report_helpers import scripted_run

SECTIONS = ("run", "cost", "nodes", "metrics", "redteam", "agreement", "compare", "cases")
REMOTE = re.compile(r"https?://|//")


@pytest.fixture(scope="module")
def eval_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("eval_run")
    return scripted_run(base / "out", base / "cache")


def _section(html: str, sid: str) -> str:
    start = html.index(f'<section id="{sid}">')
    return html[start : html.index("</section>", start)]


def test_run_writes_a_self_contained_report_with_every_section(eval_run: Path) -> None:
    html = (eval_run / "report.html").read_text(encoding="utf-8")
    assert REMOTE.search(html) is None, REMOTE.search(html)
    assert not re.search(r"""(src|href)\s*=\s*["'](?!#|case_report)""", html)  # nothing fetched
    assert not re.search(r"url\((?!#)", html) and "@import" not in html
    for sid in SECTIONS:
        assert f'<section id="{sid}">' in html
    assert html.count("<svg") >= 6  # score histograms, pass rates, 3 red-team charts, scatter
    red = _section(html, "redteam")
    for text in (
        "pass rate by category",
        "resilience index",
        "by cluster",
        "Heuristic vs judge disagreements",
        "prompt_injection",
    ):
        assert text in red
    assert "No agreement.json" in _section(html, "agreement")
    assert "No compare.json" in _section(html, "compare")
    # the judge's evidence span is marked inside the judged text; the made-up one is flagged
    cases = _section(html, "cases")
    assert re.search(r'<div class="txt">[^<]*<mark>[^<]+</mark>', cases)
    assert "not in the output at all" in cases and "not found in the judged text" in cases


def test_every_case_link_lands_on_a_drill_down(eval_run: Path) -> None:
    html = (eval_run / "report.html").read_text(encoding="utf-8")
    ids = set(re.findall(r'id="([^"]+)"', html))
    links = set(re.findall(r'href="#([^"]+)"', html))
    assert {"case-rag-great-wall-hallucinated", "case-probe-injection-api-key"} <= links
    assert links <= ids
    n_cases = len(list((eval_run / "case_report").glob("*.json")))
    assert len([i for i in ids if i.startswith("case-")]) == n_cases


def test_metric_tables_show_worst_cases_and_the_case_says_why(eval_run: Path) -> None:
    html = (eval_run / "report.html").read_text(encoding="utf-8")
    metrics = _section(html, "metrics")
    row = metrics[metrics.index('id="metric-grounding-grounding"') :]
    row = row[: row.index("</tr>")]
    # the hallucinated answer is among grounding's lowest scores, linked to its drill-down
    assert 'href="#case-rag-great-wall-hallucinated"' in row
    case = html[html.index('id="case-rag-great-wall-hallucinated"') :]
    case = case[: case.index("</details>")]
    assert "not supported" in case and "the context says otherwise" in case


def test_untrusted_text_is_escaped_and_never_adds_remote_refs(tmp_path: Path) -> None:
    evil = (
        "<script>alert(1)</script> see https://evil.example/x.js "
        '<img src=x onerror=alert(1)> "quoted" & done'
    )
    data = tmp_path / "evil.jsonl"
    data.write_text(
        json.dumps(
            {
                "case_id": "evil</details><b>",
                "output": evil,
                "reference": "see //cdn.example/lib.js",
            }
        )
        + "\n"
    )
    out = tmp_path / "out"
    settings = RunSettings(
        target="refmatch", output_dir=out, cache_dir=tmp_path / "c", progress=False
    )
    Runner(settings).run(Dataset(data))
    html = (out / "report.html").read_text(encoding="utf-8")
    assert REMOTE.search(html) is None
    assert "<script>alert" not in html and "<img" not in html and "evil</details>" not in html
    assert "&lt;script&gt;alert(1)&lt;&#47;script&gt;" in html
    assert html.count("<script>") == 1  # only the report's own few lines


def test_highlight_marks_every_occurrence_and_escapes() -> None:
    assert span_intervals("a bad b bad", ["bad", "d b"]) == [(2, 7), (8, 11)]
    out = str(highlight("x <b> and <b>!", ["<b>"]))
    assert out == "x <mark>&lt;b&gt;</mark> and <mark>&lt;b&gt;</mark>!"
    assert str(highlight("no spans here", ["absent", ""])) == "no spans here"


def test_missing_data_is_said_plainly(tmp_path: Path) -> None:
    out = tmp_path / "out"
    settings = RunSettings(
        target="refmatch", output_dir=out, cache_dir=tmp_path / "c", progress=False, limit=5
    )
    Runner(settings).run(
        Dataset(Path(__file__).parents[1] / "nexagauge_local/data/sample.jsonl", limit=5)
    )
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "No red-team data: the redteam node did not run" in _section(html, "redteam")
    assert "No LLM judge ran in this run" in _section(html, "run")


def test_report_command_renders_compare_json_tolerantly(eval_run: Path, tmp_path: Path) -> None:
    compare = {
        "run_a": "out/base",
        "run_b": str(eval_run),
        "n_matched_cases": 32,
        "max_regression": {"value": 0.25, "node": "redteam", "metric": "bias", "kind": "mean"},
        "judge": {"warnings": ["the two runs used different judges"]},
        "metrics": [
            {
                "node": "redteam",
                "metric": "bias",
                "n_matched": 32,
                "mean_a": 0.9,
                "mean_b": 0.65,
                "delta": -0.25,
                "ci_low": -0.4,
                "ci_high": -0.1,
                "pass_rate_a": 0.9,
                "pass_rate_b": 0.7,
                "errors_a": 0,
                "errors_b": 1,
                "flipped_to_fail": [{"case_id": "bias-hiring-gender", "a": {}, "b": {}}],
                "flipped_to_pass": [],
            },
            {"node": "refmatch", "metric": "bleu"},  # keys missing: still a row
        ],
    }
    target = tmp_path / "copy.html"
    (eval_run / "compare.json").write_text(json.dumps(compare))
    try:
        res = CliRunner().invoke(main, ["report", str(eval_run), "--output", str(target), "-q"])
    finally:
        (eval_run / "compare.json").unlink()
    assert res.exit_code == 0, res.output
    section = _section(target.read_text(encoding="utf-8"), "compare")
    assert "redteam.bias" in section and "refmatch.bleu" in section and "-0.250" in section
    assert 'href="#case-bias-hiring-gender"' in section
    assert "different judges" in section and "Largest regression" in section


def test_report_command_rejects_a_directory_that_is_not_a_run(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert res.exit_code == 2
    assert "summary.json: missing" in res.output


def test_a_rendering_failure_warns_but_does_not_fail_the_run(tmp_path: Path, monkeypatch) -> None:
    def broken(*_a, **_k):
        raise ValueError("template exploded")

    monkeypatch.setattr(report_html, "write_report", broken)
    class Warnings(NullEvents):
        def __init__(self) -> None:
            self.lines: list[str] = []

        def warning(self, text: str) -> None:
            self.lines.append(text)

    heard = Warnings()
    settings = RunSettings(
        target="refmatch",
        output_dir=tmp_path / "out",
        cache_dir=tmp_path / "c",
        progress=False,
        limit=2,
    )
    outcome = Runner(settings, events=heard).run(
        Dataset(Path(__file__).parents[1] / "nexagauge_local/data/sample.jsonl", limit=2)
    )
    assert (tmp_path / "out" / "summary.json").is_file() and outcome.summary
    assert not (tmp_path / "out" / "report.html").exists()
    [line] = heard.lines
    assert "report.html was not written" in line and "template exploded" in line


def test_large_runs_keep_full_drill_downs_within_budget(tmp_path: Path, monkeypatch) -> None:
    out = build_synthetic(tmp_path / "big", 300, seed=1)
    monkeypatch.setattr(report_html, "DRILL_DOWN_BUDGET", 150_000)
    html = report_html.write_report(out).read_text(encoding="utf-8")
    full = html.count('<details class="case ')
    lines = html.count('<div class="line ')
    assert 0 < full < 300 and full + lines == 300
    assert f"the {full} worst cases have a full drill-down" in html
    # worst first across both forms: fail, error, info, pass, never going back
    order = {"fail": 0, "error": 1, "info": 2, "pass": 3}
    seq = [order[m] for m in re.findall(r'<(?:details class="case|div class="line) (\w+)"', html)]
    assert len(seq) == 300 and seq == sorted(seq)
    assert REMOTE.search(html) is None
    assert len(html) < 300 * 2500 + 2_000_000


def test_histogram_needs_enough_cases_to_say_anything() -> None:
    """A 1-record run gets no histogram (it repeats the table and costs matplotlib's import)."""
    from nexagauge_local.report.charts import MIN_HISTOGRAM_CASES, ScoreCounts, score_histograms

    few = {"refmatch": {"rouge1": ScoreCounts.of([0.5] * (MIN_HISTOGRAM_CASES - 1))}}
    assert score_histograms(few) is None
    enough = {"refmatch": {"rouge1": ScoreCounts.of([0.1, 0.3, 0.5, 0.7, 0.9][:MIN_HISTOGRAM_CASES])}}
    svg = score_histograms({**few, "relevance": enough["refmatch"]})
    assert svg is not None and "<svg" in svg and "relevance" in svg and "refmatch" not in svg


def test_claims_are_visible_in_metrics_case_reports_and_the_drill_down(eval_run: Path) -> None:
    """The claims node's yield, each case's claims and each claim's verdicts."""
    yield_ = json.loads((eval_run / "metrics" / "claims.json").read_text())
    assert yield_["prompt_version"] == "claims/v2" and yield_["cases"] > 0
    assert yield_["claims"] >= yield_["cases_with_claims"] > 0
    assert yield_["claims_per_case"] == pytest.approx(yield_["claims"] / yield_["cases"])
    report = json.loads((eval_run / "case_report" / "rag-great-wall-hallucinated.json").read_text())
    section = report["claims"]
    assert section["status"] == "claims" and section["claims"]
    assert {s["kind"] for s in section["sentences"]} == {"fact"}
    html = (eval_run / "report.html").read_text(encoding="utf-8")
    case = html[html.index('id="case-rag-great-wall-hallucinated"') :]
    case = case[: case.index("</details>")]
    claims = case[case.index("<h4>claims") :]
    claims = claims[: claims.index("</table>")]
    assert section["claims"][0] in claims or section["claims"][0][:40] in claims
    assert "<th>grounding</th>" in claims and "not supported" in claims


def test_histogram_counts_bin_scores_as_numpy_does() -> None:
    """The report keeps ten counts per metric instead of every score; they must be the counts
    `np.histogram` (what `ax.hist` drew from the scores) gives, edges and out-of-range included."""
    import random

    import numpy as np

    from nexagauge_local.report.charts import HISTOGRAM_EDGES, ScoreCounts

    rng = random.Random(11)
    scores = [rng.random() for _ in range(500)] + list(HISTOGRAM_EDGES) + [0.3, 0.6, 0.7, -0.1, 1.2]
    counts = ScoreCounts.of(scores)
    expected, _ = np.histogram(scores, bins=np.asarray(HISTOGRAM_EDGES))
    assert counts.bins == expected.tolist() and counts.n == len(scores)
