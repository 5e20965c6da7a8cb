"""How the application's typed failures look on the command line: message and exit code."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import click

from nexagauge_local.app.errors import (
    ClusterSetupError,
    InputError,
    JudgeSetupError,
    OutputDirError,
    ProbeFileError,
)
from nexagauge_local.cli.options import BAD_INPUT, INTERRUPTED
from nexagauge_local.records import DatasetError, RecordsError


def fail_records(exc: RecordsError) -> None:
    for err in exc.errors:
        click.echo(str(err), err=True)
    click.echo(f"{len(exc.errors)} problem(s) in the input; nothing was run "
               "(use --on-error skip to run the good records).", err=True)
    sys.exit(BAD_INPUT)


def fail_probes(exc: ProbeFileError) -> None:
    for err in exc.errors:
        click.echo(str(err), err=True)
    click.echo(f"{len(exc.errors)} problem(s) in {exc.path}; nothing was generated.", err=True)
    sys.exit(BAD_INPUT)


@contextmanager
def cli_errors() -> Iterator[None]:
    """Map service failures to the CLI's messages, every one exit 2 (bad input or set-up): a
    whole-file problem is its one line, bad records are listed with a hint, an unusable
    --input/--field is a usage error, a missing judge or an unreachable cluster one line."""
    try:
        yield
    except DatasetError as exc:  # the file as a whole: no "--on-error skip" hint applies
        click.echo(str(exc), err=True)
        sys.exit(BAD_INPUT)
    except RecordsError as exc:
        fail_records(exc)
    except ProbeFileError as exc:
        fail_probes(exc)
    except InputError as exc:
        raise click.UsageError(str(exc)) from None
    except (JudgeSetupError, OutputDirError) as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(BAD_INPUT)
    except ClusterSetupError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(BAD_INPUT)
    except KeyboardInterrupt:  # click would say "Aborted!" and exit 1, like a failed gate
        click.echo("interrupted: every judgement made so far is in the judge cache; run the "
                   "same command again to resume", err=True)
        sys.exit(INTERRUPTED)
