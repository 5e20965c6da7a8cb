"""The CLI's handling of input: bad records, --on-error, --field, stdin, missing files, targets.

Runs use `refmatch` (deterministic, no model) so the whole module stays fast.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from nexagauge_local.cli import main
from nexagauge_local.graph import TARGETS

GOOD = {
    "case_id": "good-1",
    "output": "The cat sat on the mat.",
    "reference": "A cat sat on the mat.",
}
GOOD2 = {
    "case_id": "good-2",
    "output": "Paris is the capital of France.",
    "reference": "The capital of France is Paris.",
}
MISSING_OUTPUT = (
    "missing or empty (looked for: output, generation, response, answer, completion, actual_output)"
)
BAD_LINES = [
    "data.jsonl:2: invalid JSON",
    "data.jsonl:3: redteam.scoring_mode: 'scale_1_10' is not one of binary_yes_no, scale_1_5",
    f"data.jsonl:4: output: {MISSING_OUTPUT}",
    "data.jsonl:5: geval.metrics.0: needs 'criteria' or 'evaluation_steps'",
]


def invoke(args: list[str], **kw: Any) -> Result:
    return CliRunner().invoke(main, args, catch_exceptions=False, **kw)


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8"
    )
    return path


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in a temporary directory so messages carry the bare file name `data.jsonl`."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def bad_jsonl(work: Path) -> Path:
    return write_jsonl(
        work / "data.jsonl",
        [
            GOOD,
            '{"case_id": "broken", "output": ',
            {
                "case_id": "rt",
                "output": "x",
                "reference": "x",
                "redteam": {"scoring_mode": "scale_1_10"},
            },
            {"case_id": "no-output", "reference": "r"},
            {"case_id": "ge", "output": "y", "geval": {"metrics": [{"name": "m"}]}},
            GOOD2,
        ],
    )


def run_args(target: str, input_path: str, out: Path, *extra: str) -> list[str]:
    return [
        "run",
        target,
        "--input",
        input_path,
        "--output-dir",
        str(out),
        "-q",
        "--cache-dir",
        str(out.parent / "cache"),
        *extra,
    ]


def summary(out: Path) -> dict[str, Any]:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


# ---------------------------------------------------------------- --on-error fail (default)


def test_bad_input_exits_2_one_line_per_problem_and_runs_nothing(bad_jsonl: Path) -> None:
    out = bad_jsonl.parent / "out"
    result = invoke(run_args("refmatch", "data.jsonl", out))
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[: len(BAD_LINES)] == BAD_LINES
    assert len(lines) == len(BAD_LINES) + 1
    assert "nothing was run" in lines[-1] and "--on-error skip" in lines[-1]
    assert not (out / "summary.json").exists()
    assert not (out / "case_report").exists()


def test_estimate_also_refuses_bad_input(bad_jsonl: Path) -> None:
    result = invoke(["estimate", "refmatch", "--input", "data.jsonl"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[: len(BAD_LINES)] == BAD_LINES


def test_json_array_problems_are_reported_by_index(work: Path) -> None:
    (work / "data.json").write_text(json.dumps([GOOD, {"id": "x", "output": 3}, "nope"], indent=1))
    result = invoke(run_args("refmatch", "data.json", work / "out"))
    assert result.exit_code == 2
    assert result.stderr.splitlines()[:2] == [
        "data.json[1]: output: must be text, got int",
        "data.json[2]: expected a JSON object, got str",
    ]


def test_json_array_problems_are_skipped_by_index(work: Path) -> None:
    # streamed element by element, a bad element is one skipped record, as a bad JSONL line is
    (work / "data.json").write_text(json.dumps([GOOD, "nope", {"id": "x", "output": 3}]))
    out = work / "out"
    result = invoke(run_args("refmatch", "data.json", out, "--on-error", "skip"))
    assert result.exit_code == 0, result.output
    s = summary(out)
    assert (s["cases"]["valid"], s["cases"]["skipped"], s["cases"]["records"]) == (1, 2, 3)
    assert [(e["index"], e["reason"]) for e in s["skipped"]] == [
        (1, "expected a JSON object, got str"), (2, "must be text, got int")]


def test_conflicting_duplicate_case_id_is_a_bad_record(work: Path) -> None:
    write_jsonl(work / "data.jsonl", [GOOD, dict(GOOD, output="something else")])
    result = invoke(run_args("refmatch", "data.jsonl", work / "out"))
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        "data.jsonl:2: case_id: 'good-1' already used at data.jsonl:1 with different content"
    )


# ---------------------------------------------------------------- --on-error skip


def test_on_error_skip_runs_good_records_and_lists_skipped(bad_jsonl: Path) -> None:
    out = bad_jsonl.parent / "out"
    result = invoke(run_args("refmatch", "data.jsonl", out, "--on-error", "skip"))
    assert result.exit_code == 0, result.output
    s = summary(out)
    assert s["cases"]["valid"] == 2 and s["cases"]["skipped"] == 4 and s["cases"]["records"] == 6
    skipped = [(e["line"], e["field"], e["reason"]) for e in s["skipped"]]
    assert skipped == [
        (2, None, "invalid JSON"),
        (3, "redteam.scoring_mode", "'scale_1_10' is not one of binary_yes_no, scale_1_5"),
        (4, "output", MISSING_OUTPUT),
        (5, "geval.metrics.0", "needs 'criteria' or 'evaluation_steps'"),
    ]
    assert all(e["file"] == "data.jsonl" for e in s["skipped"])
    reports = sorted(p.name for p in (out / "case_report").iterdir())
    assert len(reports) == 2 and all(name.endswith(".json") for name in reports)
    assert "good-1" in reports[0] and "good-2" in reports[1]
    for fragment in ("data.jsonl:2", "invalid JSON", "data.jsonl:4"):
        assert fragment in result.stderr


def test_on_error_skip_stderr_keeps_one_problem_per_line(
    bad_jsonl: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # a plain terminal
    result = invoke(
        run_args("refmatch", "data.jsonl", bad_jsonl.parent / "out", "--on-error", "skip")
    )
    assert result.exit_code == 0
    lines = result.stderr.splitlines()
    for expected in BAD_LINES:
        assert any(line.endswith(expected) for line in lines), expected


def test_on_error_skip_survives_markup_like_text_in_a_bad_record(work: Path) -> None:
    write_jsonl(
        work / "data.jsonl",
        [GOOD, {"case_id": "m", "output": "x", "redteam": {"scoring_mode": "[/oops]"}}],
    )
    result = CliRunner().invoke(
        main, run_args("refmatch", "data.jsonl", work / "out", "--on-error", "skip")
    )
    assert result.exit_code == 0
    assert "[/oops]" in result.stderr


def test_on_error_skip_with_only_bad_records(work: Path) -> None:
    write_jsonl(work / "data.jsonl", ["nope", {"case_id": "x"}])
    out = work / "out"
    result = invoke(run_args("refmatch", "data.jsonl", out, "--on-error", "skip"))
    assert result.exit_code == 0
    s = summary(out)
    assert s["cases"]["valid"] == 0 and [e["line"] for e in s["skipped"]] == [1, 2]


def test_exact_duplicate_runs_once_and_is_noted(work: Path) -> None:
    write_jsonl(work / "data.jsonl", [GOOD, GOOD2, dict(GOOD)])
    out = work / "out"
    result = invoke(run_args("refmatch", "data.jsonl", out))
    assert result.exit_code == 0, result.output
    s = summary(out)
    assert s["cases"] == {"records": 3, "valid": 2, "skipped": 0, "duplicates": 1}
    assert s["duplicates"] == [
        {"case_id": "good-1", "at": "data.jsonl:3", "first_seen": "data.jsonl:1"}
    ]
    assert len(list((out / "case_report").iterdir())) == 2


# ---------------------------------------------------------------- formats, --field, stdin, --limit


def test_field_mapping_on_csv(work: Path) -> None:
    with (work / "data.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["uid", "model_answer", "gold", "notes"])
        w.writerow(["c1", GOOD["output"], GOOD["reference"], "n"])
        w.writerow(["c2", GOOD2["output"], GOOD2["reference"], ""])
    out = work / "out"
    args = run_args(
        "refmatch",
        "data.csv",
        out,
        "--field",
        "output=model_answer",
        "--field",
        "reference=gold",
        "--field",
        "case_id=uid",
    )
    result = invoke(args)
    assert result.exit_code == 0, result.output
    s = summary(out)
    assert s["cases"]["valid"] == 2 and s["nodes"]["refmatch"]["eligible"] == 2
    reports = [json.loads(p.read_text()) for p in sorted((out / "case_report").iterdir())]
    assert [r["input"]["case_id"] for r in reports] == ["c1", "c2"]
    assert reports[0]["input"]["output"] == GOOD["output"]
    assert reports[0]["input"]["reference"] == GOOD["reference"]
    assert {m["name"] for m in reports[0]["refmatch"]["metrics"]} >= {"bleu", "meteor"}


def test_csv_without_field_mapping_reports_missing_output(work: Path) -> None:
    (work / "data.csv").write_text("uid,model_answer\nc1,hello\n", encoding="utf-8")
    result = invoke(run_args("refmatch", "data.csv", work / "out"))
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0].startswith("data.csv:2: output: missing or empty")


@pytest.mark.parametrize("bad", ["output", "answerr=col", "=col"])
def test_bad_field_option_exits_2(work: Path, bad: str) -> None:
    write_jsonl(work / "data.jsonl", [GOOD])
    result = invoke(run_args("refmatch", "data.jsonl", work / "out", "--field", bad))
    assert result.exit_code == 2
    assert f"--field {bad!r}" in result.stderr
    assert not (work / "out" / "summary.json").exists()


def test_stdin_input(work: Path) -> None:
    data = json.dumps(GOOD) + "\n" + json.dumps(GOOD2) + "\n"
    out = work / "out"
    result = invoke(run_args("refmatch", "-", out), input=data)
    assert result.exit_code == 0, result.output
    s = summary(out)
    assert s["cases"]["valid"] == 2 and s["input"] == "<stdin>"


def test_stdin_bad_line_is_named_stdin(work: Path) -> None:
    result = invoke(run_args("refmatch", "-", work / "out"), input=json.dumps(GOOD) + "\n{oops\n")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == "<stdin>:2: invalid JSON"


def test_limit(work: Path) -> None:
    write_jsonl(work / "data.jsonl", [GOOD, GOOD2, "nope"])
    out = work / "out"
    result = invoke(run_args("refmatch", "data.jsonl", out, "--limit", "2"))
    assert result.exit_code == 0, result.output  # the bad third line is never read
    assert summary(out)["cases"]["valid"] == 2
    assert invoke(run_args("refmatch", "data.jsonl", out, "--limit", "0")).exit_code == 2


def test_missing_input_file(work: Path) -> None:
    result = invoke(run_args("refmatch", "missing.jsonl", work / "out"))
    assert result.exit_code == 2
    assert "--input missing.jsonl: no such file" in result.stderr
    assert "Traceback" not in result.output


def test_input_is_required(work: Path) -> None:
    result = invoke(["run", "refmatch", "--output-dir", str(work / "out")])
    assert result.exit_code == 2 and "--input" in result.stderr


# ---------------------------------------------------------------- targets


@pytest.mark.parametrize("command", [["run"], ["estimate"]])
def test_unknown_target_exits_2_and_lists_targets(work: Path, command: list[str]) -> None:
    write_jsonl(work / "data.jsonl", [GOOD])
    args = [*command, "refmatc", "--input", "data.jsonl"]
    if command == ["run"]:
        args += ["--output-dir", str(work / "out")]
    result = invoke(args)
    assert result.exit_code == 2
    assert "unknown target 'refmatc'" in result.stderr
    for target in TARGETS:
        assert target in result.stderr
    assert not (work / "out").exists()


# ---------------------------------------------------------------- nodes, estimate


def test_nodes_command() -> None:
    result = invoke(["nodes"])
    assert result.exit_code == 0
    for name in ("scan", *TARGETS):  # every node; atomic_units is a step, not a target
        assert name in result.stdout
    assert "targets: " + ", ".join(TARGETS) in result.stdout


def test_estimate_refmatch(work: Path) -> None:
    write_jsonl(work / "data.jsonl", [GOOD, GOOD2, {"case_id": "no-ref", "output": "x"}])
    result = invoke(["estimate", "refmatch", "--input", "data.jsonl"])
    assert result.exit_code == 0, result.output
    assert "3 case(s)" in result.stdout
    row = next(line for line in result.stdout.splitlines() if "refmatch *" in line)
    assert "2" in row  # eligible cases; * = no judge, zero GPU-seconds
    assert "refmatch: skipped 1 (1 missing reference)" in result.stdout
    assert not (work / "out").exists()


def test_bundled_sample_estimate_and_refmatch(tmp_path: Path) -> None:
    sample = Path(__file__).resolve().parents[1] / "nexagauge_local" / "data" / "sample.jsonl"
    result = invoke(["estimate", "refmatch", "--input", str(sample)])
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    result = invoke(run_args("refmatch", str(sample), out))
    assert result.exit_code == 0, result.output
    s = summary(out)
    assert s["cases"]["skipped"] == 0 and s["cases"]["valid"] == s["cases"]["records"] >= 25
    assert s["nodes"]["refmatch"]["eligible"] >= 8


# ---------------------------------------------------------------- help


def walk_commands(group: click.Group, prefix: list[str]) -> Iterator[list[str]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None
        yield [*prefix, name]
        if isinstance(cmd, click.Group):
            yield from walk_commands(cmd, [*prefix, name])


ALL_COMMANDS = [[], *walk_commands(main, [])]


@pytest.mark.parametrize("path", ALL_COMMANDS, ids=[" ".join(p) or "main" for p in ALL_COMMANDS])
def test_every_help_has_an_example(path: list[str]) -> None:
    result = invoke([*path, "--help"])
    assert result.exit_code == 0
    assert "Example" in result.stdout, f"`{' '.join(path)} --help` shows no example"
