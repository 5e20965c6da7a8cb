"""What a node's report panels are given and give back: the hooks that keep report/ node-free.

A node that has a run-level story to tell (redteam: heuristic vs judge tables, indices,
observability) declares a `ReportPanel` in its SPEC: a view function over its
`metrics/<node>.json` and a Jinja template file next to it. The report renders one section per
declared panel, in graph order, with a link in the page's navigation. The view runs in the
report layer but lives with its node (a layer below), so the report hands it the tools it may
use (`PanelTools`: the chart helpers and the case anchors) instead of the node importing them.

A node that has something to show in each case's drill-down (claims: each claim with its
verdicts; redteam: the heuristic's score) declares a `CasePanel`: a view over the case report
and a template next to it, printed in the drill-down in graph order. The report used to name
these nodes and their keys itself.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from nexagauge_local.case_report import CaseReport


class PanelCharts(Protocol):
    """The chart helpers a panel may draw with (report/charts.py provides them as inline SVG;
    None when there is nothing to draw)."""

    def grouped_rates(
        self, groups: Sequence[str], series: Mapping[str, Sequence[float | None]], title: str
    ) -> str | None: ...

    def count_bars(
        self, counts: Mapping[str, int], title: str, xlabel: str = "cases"
    ) -> str | None: ...

    def sample_points(
        self, points: Sequence[Mapping[str, Any]], limit: int = ..., seed: int = 0
    ) -> list[Mapping[str, Any]]: ...

    def observability_scatter(self, points: Sequence[Mapping[str, Any]]) -> str | None: ...


@dataclass(frozen=True)
class PanelTools:
    """What the report hands a panel view."""

    charts: PanelCharts
    anchors: Mapping[str, str]  # case_id -> the case's anchor on the page (listed cases only)


PanelView = Callable[[Mapping[str, Any] | None, PanelTools], Mapping[str, Any]]


@dataclass(frozen=True)
class ReportPanel:
    """A node's section of report.html.

    `view(metrics, tools)` gets the node's metrics/<node>.json (None when the node did not run:
    the panel then says why it is empty) and returns the values its template prints, as the
    template variable `panel`. `template` is a file in the view's own folder; the section's
    anchor is the node's name, and `title` is its link in the page's navigation.
    """

    title: str
    view: PanelView
    template: str

    @property
    def folder(self) -> Path:
        """The folder the template is read from: the view module's own."""
        return _folder_of(self.view)


CaseView = Callable[[CaseReport], Any]


@dataclass(frozen=True)
class CasePanel:
    """A node's part of each case's drill-down in report.html.

    `view(report)` gets the whole case report (a part may show what other nodes said, as the
    claims part shows each claim's verdicts) and returns what `template` prints as `part.view`,
    or None when the case has nothing to show (the part is then left out). `template` is a file
    in the view's own folder.
    """

    view: CaseView
    template: str

    @property
    def folder(self) -> Path:
        return _folder_of(self.view)


ColumnKind = Literal["text", "number", "flag", "whole"]  # str, float, bool, int


@dataclass(frozen=True)
class RowExtras:
    """Columns a node adds to each of its metric rows (export, agreement, the HTML tables).

    `columns`: name -> kind, in the order export writes them (after the common columns; the
    kind types Parquet's column). `values(section)` gets the node's case-report section and
    returns some of those columns' values (a missing one is empty)."""

    columns: Mapping[str, ColumnKind]
    values: Callable[[Mapping[str, Any]], Mapping[str, Any]]


def _folder_of(view: Callable[..., Any]) -> Path:
    module = sys.modules[view.__module__]
    return Path(module.__file__ or ".").resolve().parent
