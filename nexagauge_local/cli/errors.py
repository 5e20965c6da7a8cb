"""How the application's typed failures look on the command line: message and exit code.

Every command runs its service inside `cli_errors()`, the one place that turns a typed error
into its lines on stderr and its exit code (cli/exit_codes.py). The services never print or
exit; the commands never catch.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import click
from rich.console import Console
from rich.text import Text

from nexagauge_local.app.errors import (
    AppError,
    CheckFailed,
    ExportError,
    InputError,
    LabelFileError,
    ProbeFileError,
    ReportRefused,
    RunDirError,
    RunInputError,
)
from nexagauge_local.cli.exit_codes import BAD_INPUT, CHECK_FAILED
from nexagauge_local.cli.signals import exit_code_of, interrupted_by, stops_surfaced
from nexagauge_local.records import DatasetError, RecordsError
from nexagauge_local.redact import redact_text

_RESUME = ": every judgement made so far is in the judge cache; run the same command again to resume"
# generate and attack keep their work in --output, not in the judge cache
OUTPUT_RESUME = ": every answer written so far is in --output; run the same command again to resume"
RESUME_HINT = "interrupted" + _RESUME  # Ctrl-C; SIGTERM/SIGHUP say "stopped by SIGTERM"

# How each failure's last line starts; the first matching type wins. "error: " is compare's
# and gate's (red on a terminal); "Error: " that of the set-up failures, click's own style.
_PREFIXES: tuple[tuple[tuple[type[Exception], ...], str], ...] = (
    ((DatasetError, RunDirError, ExportError, ProbeFileError, LabelFileError, ReportRefused), ""),
    ((RunInputError,), "error: "),
)


def _prefix(exc: Exception) -> str:
    return next((prefix for types, prefix in _PREFIXES if isinstance(exc, types)), "Error: ")


def print_failure(exc: DatasetError | RecordsError | AppError) -> int:
    """Print a failure the way the commands always have; return its exit code."""
    if isinstance(exc, RecordsError) and not isinstance(exc, DatasetError):
        for err in exc.errors:
            click.echo(str(err), err=True)
        click.echo(f"{len(exc.errors)} problem(s) in the input; nothing was run "
                   "(use --on-error skip to run the good records).", err=True)
        return BAD_INPUT
    for line in getattr(exc, "details", ()):
        click.echo(redact_text(line), err=True)
    prefix = _prefix(exc)
    message = redact_text(str(exc))  # a URL in a message names no password (redact.py)
    if isinstance(exc, RunInputError):  # compare and gate say it in red on a terminal
        Console(stderr=True).print(Text.assemble((prefix, "bold red"), message), soft_wrap=True)
    else:
        click.echo(f"{prefix}{message}", err=True)
    return CHECK_FAILED if isinstance(exc, CheckFailed) else BAD_INPUT


@contextmanager
def cli_errors(*, resumable: bool = False, resume_hint: str = _RESUME) -> Iterator[None]:
    """Map service failures to the CLI's messages and exit codes: a whole-file problem is its
    one line, bad records are listed with a hint, an unusable --input/--field is a usage error,
    a check that answered no (a run that does not reproduce, a folder that no longer matches
    its manifest) exits 1, every other failure exits 2 with its line.

    `resumable`: the command's judge work is cached, so Ctrl-C exits 130 (SIGTERM 143, SIGHUP
    129: cli/signals.py) with the hint to run it again; elsewhere click's own "Aborted!" stands
    for Ctrl-C, and the CLI's group says what signal stopped it. `resume_hint` says where the
    work done so far is kept (the judge cache by default; `generate` and `attack`: --output).
    """
    try:
        with stops_surfaced():
            yield
    except InputError as exc:
        raise click.UsageError(redact_text(str(exc))) from None
    except (DatasetError, RecordsError, AppError) as exc:
        sys.exit(print_failure(exc))
    except KeyboardInterrupt as exc:  # click would say "Aborted!" and exit 1, like a failed gate
        if not resumable:
            raise
        click.echo(interrupted_by(exc) + resume_hint, err=True)
        sys.exit(exit_code_of(exc))
