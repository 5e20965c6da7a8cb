"""report.html: one self-contained page rendered from an output directory's JSON files.

Self-contained means no request leaves the file: CSS and the few lines of JS are inlined,
charts are inline SVG, and nothing is fetched (no CDN, fonts or images). Every value printed
by a template goes through `_finalize`, which escapes it and writes '/' as an entity, so
untrusted evaluated text can neither inject markup nor put a `//` reference into the page.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from jinja2 import (
    ChoiceLoader,
    Environment,
    FileSystemBytecodeCache,
    FileSystemLoader,
    PackageLoader,
    PrefixLoader,
)
from markupsafe import Markup

from nexagauge_local.audit import ProvenancePanel, provenance_for_outdir
from nexagauge_local.events import Notices
from nexagauge_local.graph import GRAPH, Graph
from nexagauge_local.nodes.panel import PanelTools
from nexagauge_local.report import charts
from nexagauge_local.report.charts_ahead import ChartsAhead
from nexagauge_local.report.files import write_text_atomic
from nexagauge_local.report.highlight import safe_text
from nexagauge_local.report.rundata import CaseFile, RunData, load_run
from nexagauge_local.report.view_cases import CasesDigest, CaseView, digest_cases
from nexagauge_local.report.view_extra import agreement_view, compare_view
from nexagauge_local.report.view_run import cost_view, header_view, nodes_view

REPORT_NAME = "report.html"
PAGE_SIZE = 100
OPEN_CASES = 3
DRILL_DOWN_BUDGET = 7_000_000  # characters of full case blocks; keeps 10k-case pages < 15 MB
DASH = Markup("&ndash;")


def _finalize(value: Any) -> Markup:
    if value is None:
        return DASH
    return safe_text(value)


def _num(value: Any, digits: int = 0) -> Markup | str:
    if value is None or isinstance(value, bool):
        return DASH if value is None else str(value)
    if isinstance(value, int) and digits == 0:
        return f"{value:,}"
    if isinstance(value, int | float):
        return f"{value:,.{digits}f}"
    return str(value)


def _pct(value: Any) -> Markup | str:
    if value is None or not isinstance(value, int | float):
        return DASH
    return f"{100 * value:.1f}%"


def environment(graph: Graph = GRAPH, bytecode_dir: Path | None = None) -> Environment:
    """The page's templates, plus each node panel's (run and case panels) template as
    "<node>/<file>" read from the node's own folder (nodes/panel.py).

    `bytecode_dir`: where compiled templates are kept (Jinja's own cache, checked against each
    template's source and Jinja's version): compiling the page's ten templates was a third of
    the report's time in a fully cached re-score."""
    panels = {s.name: FileSystemLoader(sorted({str(p.folder) for p in (s.report_panel,
                                                                         s.case_panel) if p}))
              for s in graph.nodes if s.report_panel is not None or s.case_panel is not None}
    bytecode = None
    if bytecode_dir is not None:
        try:
            bytecode_dir.mkdir(parents=True, exist_ok=True)
            bytecode = FileSystemBytecodeCache(str(bytecode_dir))
        except OSError:
            bytecode = None  # an unwritable cache folder only costs compiling
    env = Environment(
        bytecode_cache=bytecode,
        loader=ChoiceLoader([PackageLoader("nexagauge_local.report", "templates"),
                             PrefixLoader(panels)]),
        autoescape=True,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = _num
    env.filters["pct"] = _pct
    return env


def _pages(views: list[Any]) -> list[list[Any]]:
    return [views[i : i + PAGE_SIZE] for i in range(0, len(views), PAGE_SIZE)]


def case_entries(env: Environment, views: list[CaseView]) -> tuple[list[Markup], int]:
    """Each case's drill-down HTML, worst first: a full block while the page's byte budget
    lasts, then one compact line (status, score, failing metrics, link to the case JSON).
    Returns the entries and how many got a full block."""
    macros = env.get_template("_macros.html.j2").module
    entries: list[Markup] = []
    used = 0
    full = 0
    for i, view in enumerate(views):
        if used < DRILL_DOWN_BUDGET:
            html = Markup(macros.case_block(view, i < OPEN_CASES))  # type: ignore[attr-defined]
            used += len(html)
            full += 1
        else:
            html = Markup(macros.case_line(view))  # type: ignore[attr-defined]
        entries.append(html)
    return entries, full


def _counted(
    cases: Iterable[CaseFile], progress: Callable[[int], None] | None
) -> Iterator[CaseFile]:
    for case in cases:
        yield case
        if progress:
            progress(1)


def panels_view(graph: Graph, run: RunData, anchors: dict[str, str]) -> list[dict[str, Any]]:
    """One section per node that declares a report panel, in graph order: its anchor and nav
    title, its template and the values its view made from metrics/<node>.json."""
    tools = PanelTools(charts=charts, anchors=anchors)
    out: list[dict[str, Any]] = []
    for spec in graph.nodes:
        panel = spec.report_panel
        if panel is None:
            continue
        out.append({"anchor": spec.name, "title": panel.title,
                    "template": f"{spec.name}/{panel.template}",
                    "view": panel.view(run.metrics_of(spec.name), tools)})
    return out


def chart_views(graph: Graph, run: RunData, digest: CasesDigest) -> tuple[Any, list[dict[str, Any]]]:
    """The page's views that hold charts: the metric overview and the node panels."""
    return nodes_view(run.node_metrics, digest), panels_view(graph, run, digest.anchors)


def draw_charts_job(out_dir: Path, digest: CasesDigest | None,
                    graph: Graph = GRAPH) -> Callable[[], object] | None:
    """What a ChartsAhead child runs for a run's page: chart_views as build_context will call
    them, when `digest` stands for the folder's cases (else None: the page digests the case
    files itself, and a child would have to as well)."""
    if digest is None:
        return None

    def job() -> object:
        run = load_run(out_dir, graph.metric_nodes)
        if not digest.stands_for(run.count_cases()):
            return None
        return chart_views(graph, run, digest)

    return job


def build_context(
    env: Environment,
    run: RunData,
    progress: Callable[[int], None] | None = None,
    provenance: ProvenancePanel | None = None,
    graph: Graph = GRAPH,
    digest: CasesDigest | None = None,
    ahead: ChartsAhead | None = None,
) -> dict[str, Any]:
    """Everything the templates print, as plain values, Markup (charts, highlighted text) and
    small dataclasses. `digest`: the case reports' digest made while they were written (the
    runner's); used only when the folder holds exactly the cases it was made from, else the
    case files are read. `ahead`: a child drawing the charts into the active chart memo
    (chart_views); waited for once the case blocks are rendered, just before the charts."""
    n_cases = run.count_cases()
    if digest is None or not digest.stands_for(n_cases):
        digest = digest_cases(_counted(run.iter_cases(ordered=False), progress), n_cases, graph)
    elif progress:
        progress(n_cases)
    entries, full = case_entries(env, digest.cases)
    pages = _pages(digest.cases)
    if ahead is not None:
        ahead.wait()
    nodes, panels = chart_views(graph, run, digest)
    return {
        "header": header_view(run.summary, n_cases),
        "cost": cost_view(run.summary),
        "nodes": nodes,
        "panels": panels,
        "agree": agreement_view(run.agreement, digest.anchors),
        "cmp": compare_view(run.compare, digest.anchors),
        "prov": provenance,
        "cases": {
            "views": digest.cases,
            "pages": _pages(entries),
            "full": full,
            "page_size": PAGE_SIZE,
            "page_counts": [dict(Counter(v.status for v in page)) for page in pages],
            "open_n": OPEN_CASES,
            "field_chars": digest.field_chars,
            "total": digest.total,
        },
    }


def render_html(
    run: RunData,
    progress: Callable[[int], None] | None = None,
    provenance: ProvenancePanel | None = None,
    graph: Graph = GRAPH,
    memo_dir: Path | None = None,
    digest: CasesDigest | None = None,
    ahead: ChartsAhead | None = None,
) -> str:
    """The page; `graph` says which nodes' panels it has (the pipeline's by default).
    `memo_dir`: where compiled templates and drawn charts are kept between runs (None: none).
    `digest`, `ahead`: see build_context."""
    env = environment(graph, memo_dir / "templates" if memo_dir is not None else None)
    context = build_context(env, run, progress, provenance, graph, digest, ahead)
    return env.get_template("report.html.j2").render(context)


def write_report(
    out_dir: Path,
    output: Path | None = None,
    progress: Callable[[int], None] | None = None,
    provenance: ProvenancePanel | None = None,
    graph: Graph = GRAPH,
    memo_dir: Path | None = None,
    digest: CasesDigest | None = None,
    ahead: ChartsAhead | None = None,
) -> Path:
    """Render `out_dir`'s report to `output` (default out_dir/report.html), atomically.

    The provenance panel shows `provenance` (a run passes the facts its manifest is about to
    hold), else what out_dir/manifest.json holds (a re-render), else says there is none.
    `memo_dir`: a folder where compiled templates and charts (keyed by their arguments,
    charts.memo_in) are kept, so an unchanged re-score renders without matplotlib.
    `ahead`: a child drawing the charts into its memo folder (charts_ahead.py), which is then
    the chart memo this render reads.
    Raises RunDirError when out_dir is not a finished run.
    """
    run = load_run(out_dir, graph.metric_nodes)
    target = output or Path(out_dir) / REPORT_NAME
    if provenance is None:
        provenance = provenance_for_outdir(out_dir)
    with charts.memo_in(ahead.memo_folder if ahead is not None else chart_memo_dir(memo_dir)):
        html = render_html(run, progress, provenance, graph, memo_dir, digest, ahead)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(os.fspath(target), html)
    return target


def chart_memo_dir(memo_dir: Path | None) -> Path | None:
    """Where the page's charts are memoised under a report memo folder (None: not at all)."""
    return memo_dir / "charts" if memo_dir is not None else None


def write_report_or_warn(
    out_dir: Path, notices: Notices, provenance: ProvenancePanel | None = None,
    graph: Graph = GRAPH, shown_as: Path | None = None, memo_dir: Path | None = None,
    digest: CasesDigest | None = None, ahead: ChartsAhead | None = None,
) -> Path | None:
    """The runner's hook: a report that fails to render must not fail a finished run (its JSON
    is already on disk), but the user must see why report.html is missing. A disk that refuses
    the write is not a rendering bug: that OSError fails the run (app/output_folder.py keeps
    the previous run). `shown_as`: the folder to name (out_dir may be the staging folder)."""
    try:
        return write_report(out_dir, provenance=provenance, graph=graph, memo_dir=memo_dir,
                            digest=digest, ahead=ahead)
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - any rendering bug is reported, never fatal
        notices.warning(
            f"report.html was not written ({type(exc).__name__}: {exc}); the JSON results "
            f"are complete. Retry with: nexagauge-local report {shown_as or out_dir}"
        )
        return None
