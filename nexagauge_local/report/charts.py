"""Charts as inline SVG strings, drawn with matplotlib's object API (no pyplot global state).

Text is emitted as SVG <text> (svg.fonttype = none): a tenth of the size of glyph paths and
selectable in the browser. Matplotlib's SVG carries an XML prolog, a DOCTYPE, RDF metadata and
xmlns URLs; inline SVG in HTML5 needs none of them, and the report promises no `//` anywhere,
so `clean_svg` strips them. Scatter plots keep at most MAX_POINTS points (a seeded sample, said
in the caption) so a 10,000-case report stays small.

Inside `memo_in(folder)` every chart is kept in that folder under a key of its exact arguments,
this file and matplotlib's version (memo.py): a re-score whose numbers did not move renders the
same SVG bytes without importing matplotlib (its import and constrained layout were ~1.7 s of
a 6.4 s fully cached re-score on 2 cores).
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
import os
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec

import numpy as np
from markupsafe import Markup

from nexagauge_local.memo import ResultMemo, dist_version, memo_key, source_digest

if TYPE_CHECKING:  # matplotlib is imported when a chart is drawn
    from matplotlib.typing import RcKeyType

PASS_LINE = 0.6
MAX_POINTS = 2000
# Below this many cases a histogram says nothing the metric table does not, and drawing it (with
# matplotlib's import) was 0.6 s of a 1-record run's 1.5 s.
MIN_HISTOGRAM_CASES = 5
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
GOOD, BAD, NEUTRAL = "#59a14f", "#e15759", "#4e79a7"
HISTOGRAM_EDGES: tuple[float, ...] = tuple(np.linspace(0.0, 1.0, 11).tolist())


@dataclass
class ScoreCounts:
    """A metric's scores as the histogram draws them: how many, and how many fall in each of
    its bins. Ten ints instead of every score (8 bytes a case a metric, the last thing in the
    report's pass that grew with the run). A score lands where numpy's histogram puts it:
    edges[i] <= score < edges[i + 1], the last bin closed; scores outside [0, 1] are counted
    in `n` but drawn in no bin, as `ax.hist` drew them."""

    n: int = 0
    bins: list[int] = field(default_factory=lambda: [0] * (len(HISTOGRAM_EDGES) - 1))

    def add(self, score: float) -> None:
        self.n += 1
        if HISTOGRAM_EDGES[0] <= score <= HISTOGRAM_EDGES[-1]:
            self.bins[min(bisect_right(HISTOGRAM_EDGES, score), len(self.bins)) - 1] += 1

    def __len__(self) -> int:
        return self.n

    @classmethod
    def of(cls, scores: Iterable[float]) -> ScoreCounts:
        counts = cls()
        for score in scores:
            counts.add(score)
        return counts
P = ParamSpec("P")
_MEMO: ContextVar[ResultMemo | None] = ContextVar("chart_memo", default=None)


@contextlib.contextmanager
def memo_in(folder: str | os.PathLike[str] | None) -> Iterator[ResultMemo | None]:
    """Charts drawn inside are memoised in `folder` (None: drawn every time)."""
    memo = ResultMemo(folder, ".svg") if folder is not None else None
    token = _MEMO.set(memo)
    try:
        yield memo
    finally:
        _MEMO.reset(token)


def _canonical(value: Any) -> Any:
    """The arguments as a key names them: mappings keep their order (it is the drawing order),
    ScoreCounts are their bins."""
    if isinstance(value, ScoreCounts):
        return ["counts", value.n, list(value.bins)]
    if isinstance(value, Mapping):
        return ["map", [[str(k), _canonical(v)] for k, v in value.items()]]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, Iterable):
        return ["seq", [_canonical(v) for v in value]]
    raise TypeError(f"a chart argument of type {type(value).__name__} has no memo key")


def _memoised(draw: Callable[P, Markup | None]) -> Callable[P, Markup | None]:
    """Read the chart from the active memo, else draw it and keep it there."""

    @functools.wraps(draw)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> Markup | None:
        memo = _MEMO.get()
        if memo is None:
            return draw(*args, **kwargs)
        key = memo_key("chart", draw.__name__, source_digest(__file__),
                       dist_version("matplotlib"), _canonical(list(args)),
                       _canonical(dict(sorted(kwargs.items()))))
        hit = memo.get(key)
        if hit is not None:
            return Markup(hit)
        svg = draw(*args, **kwargs)
        if svg is not None:
            memo.put(key, str(svg))
        return svg

    return wrapper


_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "nexagauge",  # stable ids: two renders of one run give the same file
    "font.size": 9,
    "font.family": "sans-serif",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "legend.frameon": False,
    "legend.fontsize": 8,
}

_PROLOG = re.compile(r"<\?xml.*?\?>|<!DOCTYPE.*?>|<metadata>.*?</metadata>", re.DOTALL)
_XMLNS = re.compile(r'\s+xmlns(:\w+)?="[^"]*"')
_SIZE = re.compile(r'(<svg[^>]*?)\s+(width|height)="[^"]*"')


def clean_svg(svg: str) -> Markup:
    """Inline-ready SVG: no prolog, metadata or namespace URLs, no fixed size, no `//`."""
    svg = _PROLOG.sub("", svg)
    svg = _XMLNS.sub("", svg)
    while _SIZE.search(svg):
        svg = _SIZE.sub(r"\1", svg, count=1)
    while "//" in svg:  # only reachable through user text (labels); the entity renders as '/'
        svg = svg.replace("//", "/&#47;")
    return Markup(svg.strip())


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _svg(fig: Any) -> Markup:
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context(_RC):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return clean_svg(buf.getvalue())


def _draw(width: float, height: float, draw: Any) -> Markup:
    import matplotlib

    with matplotlib.rc_context(_RC):
        fig = _figure(width, height)
        draw(fig)
        return _svg(fig)


def _short(label: str, n: int = 28) -> str:
    return label if len(label) <= n else label[: n - 1] + "…"


@_memoised
def score_histograms(per_node: Mapping[str, Mapping[str, ScoreCounts]]) -> Markup | None:
    """One panel per node: stacked histogram of its metrics' scores, pass line at 0.6.

    A node whose metrics scored fewer than MIN_HISTOGRAM_CASES cases gets no panel.
    """
    nodes = [
        (n, m) for n, m in per_node.items()
        if max((len(v) for v in m.values()), default=0) >= MIN_HISTOGRAM_CASES
    ]
    if not nodes:
        return None
    cols = min(2, len(nodes))
    rows = math.ceil(len(nodes) / cols)

    def draw(fig: Any) -> None:
        axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
        bins = np.asarray(HISTOGRAM_EDGES)
        for ax, (node, metrics) in zip(axes, nodes, strict=False):
            names = [k for k, v in metrics.items() if len(v)]
            # one point per bin (its left edge), weighted by the bin's count
            data = [bins[:-1] for _ in names]
            weights = [np.asarray(metrics[k].bins, dtype=float) for k in names]
            colours = [PALETTE[i % len(PALETTE)] for i in range(len(names))]
            ax.hist(
                data, bins=bins, weights=weights, stacked=True, color=colours,
                label=[_short(k, 18) for k in names],
            )
            ax.axvline(PASS_LINE, color="#555", linestyle="--", linewidth=0.8)
            ax.set_title(node)
            ax.set_xlim(0, 1)
            ax.set_xlabel("score")
            ax.set_ylabel("metric results")
            if len(names) > 1:
                ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
        for ax in axes[len(nodes) :]:
            ax.set_visible(False)

    return _draw(8.5, 2.3 * rows, draw)


@_memoised
def rate_bars(
    items: Sequence[tuple[str, float | None, int]], title: str, xlabel: str = "pass rate"
) -> Markup | None:
    """One full-width bar per (label, rate, n): the passing share green, the failing share red,
    the rate written after the bar; rows without a rate are grey and say 'n/a'."""
    if not items:
        return None
    labels = [f"{_short(lbl, 34)} (n={n})" for lbl, _, n in items]

    def draw(fig: Any) -> None:
        ax = fig.subplots()
        y = np.arange(len(items))[::-1]
        rates = np.array([r if r is not None else 0.0 for _, r, _ in items])
        known = np.array([r is not None for _, r, _ in items])
        ax.barh(y, np.where(known, rates, 0.0), color=GOOD, height=0.65)
        ax.barh(
            y,
            np.where(known, 1.0 - rates, 0.0),
            left=rates,
            color=BAD,
            height=0.65,
            alpha=0.75,
        )
        ax.barh(y, np.where(known, 0.0, 1.0), color="#d0d7de", height=0.65)
        for yi, (_, r, _) in zip(y, items, strict=True):
            ax.annotate(
                "n/a" if r is None else f"{r:.0%}",
                (1.0, yi),
                xytext=(4, 0),
                textcoords="offset points",
                va="center",
            )
        ax.set_yticks(y, labels)
        ax.set_xlim(0, 1.1)
        ax.set_xticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
        ax.set_xlabel(xlabel)
        ax.set_title(title)

    return _draw(7.5, 0.8 + 0.28 * len(items), draw)


@_memoised
def grouped_rates(
    groups: Sequence[str], series: Mapping[str, Sequence[float | None]], title: str
) -> Markup | None:
    """Side-by-side pass rates per group (e.g. heuristic vs judge per category)."""
    if not groups or not series:
        return None

    def draw(fig: Any) -> None:
        ax = fig.subplots()
        width = 0.8 / len(series)
        y = np.arange(len(groups))[::-1]
        for i, (name, values) in enumerate(series.items()):
            rates = [v if v is not None else 0.0 for v in values]
            pos = y + (len(series) - 1) / 2 * width - i * width
            ax.barh(pos, rates, height=width * 0.9, color=PALETTE[i % len(PALETTE)], label=name)
            for p, v in zip(pos, values, strict=True):
                ax.annotate(
                    "n/a" if v is None else f"{v:.0%}",
                    (v or 0.0, p),
                    xytext=(3, 0),
                    textcoords="offset points",
                    va="center",
                    fontsize=7,
                )
        ax.set_yticks(y, [_short(g, 30) for g in groups])
        ax.set_xlim(0, 1.1)
        ax.set_xticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
        ax.set_xlabel("pass rate")
        ax.set_title(title)
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))

    return _draw(7.5, 1.0 + 0.32 * len(groups) * max(1, len(series) * 0.7), draw)


@_memoised
def count_bars(counts: Mapping[str, int], title: str, xlabel: str = "cases") -> Markup | None:
    if not counts:
        return None
    from matplotlib.ticker import MaxNLocator

    items = list(counts.items())

    def draw(fig: Any) -> None:
        ax = fig.subplots()
        y = np.arange(len(items))[::-1]
        ax.barh(y, [v for _, v in items], color=BAD, height=0.65)
        for yi, (_, v) in zip(y, items, strict=True):
            ax.annotate(f"{v:,}", (v, yi), xytext=(3, 0), textcoords="offset points", va="center")
        ax.set_yticks(y, [_short(k, 34) for k, _ in items])
        ax.set_xlabel(xlabel)
        ax.set_title(title)
        ax.margins(x=0.12)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))

    return _draw(7.5, 0.8 + 0.28 * len(items), draw)


def sample_points(
    points: Sequence[Mapping[str, Any]], limit: int = MAX_POINTS, seed: int = 0
) -> list[Mapping[str, Any]]:
    """All points when few, else a seeded uniform sample (kept in input order)."""
    if len(points) <= limit:
        return list(points)
    keep = np.sort(np.random.default_rng(seed).choice(len(points), size=limit, replace=False))
    return [points[i] for i in keep]


@_memoised
def observability_scatter(points: Sequence[Mapping[str, Any]]) -> Markup | None:
    """The 2-D scatter twice: coloured by cluster, and by category (failures drawn as x)."""
    if not points:
        return None

    def panel(ax: Any, key: str, title: str) -> None:
        values = sorted({str(p.get(key)) for p in points}, key=lambda v: (len(v), v))
        colour = {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(values)}
        for v in values:
            labelled = False
            for passed, marker in ((True, "o"), (False, "x")):
                sel = [
                    p for p in points if str(p.get(key)) == v and bool(p.get("passed")) == passed
                ]
                if sel:
                    ax.scatter(
                        [p["scatter_x"] for p in sel],
                        [p["scatter_y"] for p in sel],
                        s=16,
                        marker=marker,
                        color=colour[v],
                        alpha=0.8,
                        label=None if labelled else _short(v, 20),
                    )
                    labelled = True
        ax.set_title(title)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.legend(
            loc="center left",
            bbox_to_anchor=(1.0, 0.5),
            fontsize=7,
            ncols=1 if len(values) <= 12 else 2,
        )

    def draw(fig: Any) -> None:
        left, right = fig.subplots(1, 2)
        panel(left, "cluster", "by cluster")
        panel(right, "category", "by category")

    return _draw(7.5, 3.2, draw)
