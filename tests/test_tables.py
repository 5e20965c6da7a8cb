"""Tables a user copies a value from (`models`, `probes list`, `nodes`) never cut that value.

At 80 columns, or in a pipe (which rich treats as 80 columns), `models` used to print
"granit…" and "llama-…". Each table is rendered at 200, 80 and 60 columns and through the real
command in a pipe, and every name must appear whole between cell borders or spaces.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from nexagauge_local.cli import main
from nexagauge_local.cli.judge_cmds import print_profiles
from nexagauge_local.cli.tables import Column, fit_columns, fitted_table
from nexagauge_local.graph import NODES
from nexagauge_local.judge import list_profiles
from nexagauge_local.redteam.service.suites import select_probes


def _whole(name: str, text: str) -> bool:
    """`name` appears on one line, bounded by a border, a space or the line's ends."""
    edge = r"[\s│┃]"
    return re.search(rf"(^|{edge}){re.escape(name)}({edge}|$)", text, re.MULTILINE) is not None


def _render(width: int, draw) -> str:  # type: ignore[no-untyped-def]
    buf = io.StringIO()
    draw(Console(file=buf, width=width, color_system=None))
    return buf.getvalue()


PROFILE_NAMES = [p.name for p, _ in list_profiles()]


@pytest.mark.parametrize("width", [200, 80, 60, 30])
def test_models_never_cuts_a_profile_name(width: int) -> None:
    out = _render(width, print_profiles)
    assert "…" not in out
    missing = [n for n in PROFILE_NAMES if not _whole(n, out)]
    assert not missing, out


def test_models_in_a_pipe_shows_every_name_whole() -> None:
    """CliRunner's output is not a terminal: rich's own width for a pipe (80)."""
    result = CliRunner().invoke(main, ["models"], env={"COLUMNS": None})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    assert all(_whole(n, result.output) for n in PROFILE_NAMES), result.output


def test_a_narrow_models_table_says_what_it_left_out() -> None:
    wide, narrow = _render(200, print_profiles), _render(80, print_profiles)
    assert "left out" not in wide and "dtype" in wide
    assert "left out at this width" in narrow


@pytest.mark.parametrize("width", [80, 60])
def test_probes_list_keeps_ids_and_categories_whole(width: int) -> None:
    result = CliRunner().invoke(main, ["probes", "list"], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    for probe in select_probes():
        assert _whole(probe["id"], result.output) and _whole(probe["category"], result.output)


@pytest.mark.parametrize("width", [80, 60])
def test_nodes_keeps_node_names_whole(width: int) -> None:
    result = CliRunner().invoke(main, ["nodes"], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    assert all(_whole(spec.name, result.output) for spec in NODES), result.output


# ---------------------------------------------------------------- the fitting itself

COLUMNS = (Column("name", key=True), Column("path", min_width=10), Column("a", drop=1),
           Column("b", drop=2), Column("text", min_width=10))
ROWS = [["a-rather-long-profile-name", "/some/where", "x" * 12, "y" * 12, "words " * 8]]


def test_droppable_columns_go_first_in_their_order() -> None:
    every = fit_columns(COLUMNS, ROWS, 200)
    assert every == [0, 1, 2, 3, 4]
    # name 26, path 10, a 10, b 10, text 10, plus 3 per column and 1
    assert fit_columns(COLUMNS, ROWS, 82) == [0, 1, 2, 3, 4]
    assert fit_columns(COLUMNS, ROWS, 81) == [0, 1, 2, 4]  # b (drop=2) first
    assert fit_columns(COLUMNS, ROWS, 68) == [0, 1, 4]


def test_rows_are_stacked_when_the_keys_alone_do_not_fit() -> None:
    renderable, left_out = fitted_table("t", COLUMNS, ROWS, 40)
    assert left_out == []
    out = _render(40, lambda c: c.print(renderable))
    assert out.splitlines()[1] == "a-rather-long-profile-name"
    assert "  path: /some/where" in out


@pytest.mark.parametrize("width", [80, 60])
def test_estimate_keeps_node_names_whole(width: int, tmp_path: Path) -> None:
    from tests.test_cli_failures import RECORD, write_jsonl

    data = write_jsonl(tmp_path / "d.jsonl", [RECORD])
    result = CliRunner().invoke(main, ["estimate", "refalign", "--input", str(data)],
                                env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    for name in ("scan", "chunk", "refiner", "refalign"):
        assert _whole(name, result.stdout), result.stdout


@pytest.mark.parametrize("width", [80, 60])
def test_compare_keeps_node_and_metric_names_whole(width: int, tmp_path: Path) -> None:
    """A gate policy's rules name node.metric as compare shows them."""
    from nexagauge_local.cli.compare_cmds import print_comparison
    from nexagauge_local.compare import RunDir, compare_runs
    from tests.test_compare import claims_metric, redteam_metric, write_run

    cases = {f"c{i}": {"redteam": [redteam_metric("toxicity", i % 3 != 0)],
                       "grounding": [claims_metric("faithfulness", 0.5 + i / 50)]}
             for i in range(6)}
    runs = [RunDir(write_run(tmp_path / name, cases)) for name in ("a", "b")]
    out = _render(width, lambda c: print_comparison(compare_runs(*runs, n_resamples=50), c))
    assert "…" not in out
    assert all(_whole(n, out) for n in ("redteam", "toxicity", "grounding", "faithfulness")), out


def test_gate_keeps_a_long_rule_whole(tmp_path: Path) -> None:
    from tests.test_compare import clean_redteam_node, redteam_metric, write_run

    toxicity = {"n": 1, "mean": 1.0, "pass_rate": 1.0, "errors": 0}
    run = write_run(tmp_path / "run", {"c1": {"redteam": [redteam_metric("toxicity", True)]}},
                    metrics={"redteam": clean_redteam_node({"toxicity": toxicity})})
    rule = "redteam.toxicity.pass_rate >= 0.5"
    policy = tmp_path / "gate.toml"
    policy.write_text(f'rules = ["{rule}"]\n')
    result = CliRunner().invoke(main, ["gate", str(run), "--policy", str(policy), "-q"],
                                env={"COLUMNS": "60"})
    assert result.exit_code == 0, result.output
    assert rule in result.stdout and "…" not in result.stdout, result.stdout
