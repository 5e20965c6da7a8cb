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
    ProbeFileError,
)
from nexagauge_local.cli.options import BAD_INPUT
from nexagauge_local.records import RecordsError


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
    """Map service failures to the CLI's messages: bad records and an unreachable cluster exit
    2, an unusable --input/--field is a usage error (2), a missing judge an error (1)."""
    try:
        yield
    except RecordsError as exc:
        fail_records(exc)
    except ProbeFileError as exc:
        fail_probes(exc)
    except InputError as exc:
        raise click.UsageError(str(exc)) from None
    except JudgeSetupError as exc:
        raise click.ClickException(str(exc)) from None
    except ClusterSetupError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(BAD_INPUT)
