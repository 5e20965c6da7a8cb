"""Tables whose values a user types back (a profile name, a probe category) never come out cut.

rich fits a table to the terminal by shrinking every column and ending what no longer fits
with "…": at 80 columns, or in a pipe, `models` printed "granit…" and "llama-…", names the
user then has to guess. Here a key column is kept whole on one line, a text column folds
instead of ending in "…", and when the terminal is too narrow for all columns the least
important ones are left out (the command says which) rather than squeezed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Group, JustifyMethod, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

# a cell: rich markup, or a Text already styled
Cell = str | Text
Rows = Sequence[Sequence[Cell]]

# each column's padding (one space either side) and its rule; plus the table's last rule
_PER_COLUMN = 3
_EDGE = 1


@dataclass(frozen=True)
class Column:
    """One column. `key`: a value the user types back, shown whole on one line. `drop`: the
    order in which narrow terminals leave it out (0: never; higher goes first). `min_width`:
    the narrowest a text column is squeezed to before a column is dropped (its cells fold)."""

    header: str
    key: bool = False
    drop: int = 0
    min_width: int = 10
    justify: JustifyMethod = "left"


def _text(cell: Cell, **kwargs: Any) -> Text:
    return cell if isinstance(cell, Text) else Text.from_markup(cell, **kwargs)


def _needed(column: Column, values: Sequence[Cell]) -> int:
    """Its width on one line (a key) or the narrowest it is squeezed to (text)."""
    widest = max([len(column.header), *(_text(v).cell_len for v in values)])
    return widest if column.key else min(widest, max(column.min_width, len(column.header)))


def _width(columns: Sequence[Column], rows: Rows,
           shown: Sequence[int]) -> int:
    """The narrowest table showing the columns `shown`."""
    return sum(_needed(columns[i], [r[i] for r in rows]) + _PER_COLUMN for i in shown) + _EDGE


def fit_columns(columns: Sequence[Column], rows: Rows,
                width: int) -> list[int]:
    """The indexes of the columns shown at `width`: all of them when they fit, else the
    droppable ones left out in their `drop` order until the rest fit (the undroppable always
    stay: `fitted_table` then stacks the rows instead)."""
    shown = list(range(len(columns)))
    for i in sorted((i for i, c in enumerate(columns) if c.drop),
                    key=lambda i: -columns[i].drop):
        if _width(columns, rows, shown) <= width:
            break
        shown.remove(i)
    return shown


def fitted_table(title: str, columns: Sequence[Column], rows: Rows,
                 width: int) -> tuple[RenderableType, list[str]]:
    """The table for a console `width` wide, and the headers of the columns left out. When
    even the key columns do not fit side by side, each row is stacked instead: its keys on
    one line (the first bare, the others after their header; wrapping between keys, never
    inside one), every other value on a line below.

    Cells are rich markup (e.g. "[green]yes[/]"); widths are measured on the text shown."""
    shown = fit_columns(columns, rows, width)
    if _width(columns, rows, shown) > width:
        return _stacked(title, columns, rows), []
    table = Table(title=title)
    for i in shown:
        c = columns[i]
        if c.key:
            table.add_column(c.header, no_wrap=True, overflow="fold", justify=c.justify,
                             min_width=_needed(c, [r[i] for r in rows]))
        else:
            table.add_column(c.header, overflow="fold", justify=c.justify)
    for row in rows:
        table.add_row(*(row[i] for i in shown))
    return table, [c.header for i, c in enumerate(columns) if i not in shown]


def _stacked(title: str, columns: Sequence[Column], rows: Rows) -> Group:
    lines: list[RenderableType] = [Text.from_markup(title, style="bold")]
    for row in rows:
        first, *more = [i for i, c in enumerate(columns) if c.key]
        keys = Text("  ").join([_text(row[first], overflow="fold"),
                                *(Text.assemble((f"{columns[i].header}: ", "dim"),
                                                _text(row[i], overflow="fold"))
                                  for i in more)])
        lines.append(keys)
        lines += [Padding(Text.assemble(f"{c.header}: ", _text(row[i])), (0, 0, 0, 2), expand=False)
                  for i, c in enumerate(columns) if not c.key and row[i]]
    return Group(*lines)


def left_out_line(left_out: Sequence[str], columns: Sequence[Column],
                  rows: Rows) -> str:
    """What a narrow terminal did not show, and how wide a terminal shows it all."""
    every = _width(columns, rows, range(len(columns)))
    return (f"({', '.join(left_out)}: left out at this width; a terminal of {every} columns "
            "shows them)")
