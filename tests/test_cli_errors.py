"""cli_errors(): the one table from a typed failure to its lines on stderr and its exit code.

Why: every command's failure text and exit code go through it; CI scripts branch on the codes
(gate: 1 = a rule failed, 2 = the gate could not run), so each kind is pinned here.
"""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from nexagauge_local.app.errors import (
    AuditSetupError,
    ExportError,
    InputError,
    JudgeSetupError,
    LabelFileError,
    ReportRefused,
    ReproduceRefused,
    RunDirError,
    RunInputError,
)
from nexagauge_local.cli.errors import RESUME_HINT, cli_errors
from nexagauge_local.cli.exit_codes import BAD_INPUT, CHECK_FAILED, INTERRUPTED
from nexagauge_local.records import DatasetError


def _invoke(exc: BaseException, resumable: bool = False) -> tuple[int, str]:
    @click.command()
    def cmd() -> None:
        with cli_errors(resumable=resumable):
            raise exc

    res = CliRunner().invoke(cmd, [])
    return res.exit_code, res.stderr


@pytest.mark.parametrize(
    ("exc", "code", "text"),
    [
        (RunInputError("p.toml:3: bad rule"), BAD_INPUT, "error: p.toml:3: bad rule\n"),
        (RunDirError("out: no such directory"), BAD_INPUT, "out: no such directory\n"),
        (ExportError("needs pyarrow"), BAD_INPUT, "needs pyarrow\n"),
        (JudgeSetupError("no weights"), BAD_INPUT, "Error: no weights\n"),
        (AuditSetupError("k: already exists"), BAD_INPUT, "Error: k: already exists\n"),
        (ReproduceRefused("not the input"), CHECK_FAILED, "Error: not the input\n"),
        (ReportRefused("no longer matches", ["a: changed"]), CHECK_FAILED,
         "a: changed\nno longer matches\n"),
        (LabelFileError(Path("l.jsonl"), ["l.jsonl:1: metric: required"]), BAD_INPUT,
         "l.jsonl:1: metric: required\n1 problem(s) in l.jsonl; nothing was written.\n"),
        (DatasetError("d.json", "no such file"), BAD_INPUT, "d.json: no such file\n"),
    ],
)
def test_each_failure_has_one_message_and_code(exc: Exception, code: int, text: str) -> None:
    assert _invoke(exc) == (code, text)


def test_input_error_is_a_usage_error() -> None:
    code, err = _invoke(InputError("--input x: no such file"))
    assert code == BAD_INPUT and "Error: --input x: no such file" in err and "Usage:" in err


def test_ctrl_c_exits_130_only_where_judge_work_resumes() -> None:
    assert _invoke(KeyboardInterrupt(), resumable=True) == (INTERRUPTED, RESUME_HINT + "\n")
    code, _ = _invoke(KeyboardInterrupt())
    assert code == 1  # click's own "Aborted!"


@pytest.mark.parametrize("model", ["no-such-profile", "/nonexistent/weights-folder"])
def test_calibrate_with_an_unusable_judge_is_one_line_exit_2(model: str, tmp_path: Path) -> None:
    """calibrate checks its judge as run does: no traceback, exit 2, before any work."""
    from nexagauge_local.cli import main

    res = CliRunner().invoke(main, ["calibrate", "--model", model, "--cache-dir", str(tmp_path)])
    assert res.exit_code == BAD_INPUT, res.output
    assert "Traceback" not in res.output and res.output.startswith("Error: "), res.output
    assert len(res.output.strip().splitlines()) == 1, res.output
    assert not list(tmp_path.glob("calibration*")), "nothing is written before the judge is checked"
