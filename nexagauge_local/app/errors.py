"""Typed failures of the application services; the CLI maps each to its message and exit code.

They carry the user-facing text already, so the CLI and the library say the same thing.
"""

from __future__ import annotations

from pathlib import Path

from nexagauge_local.records import RecordError


class AppError(Exception):
    """Base of the failures a service reports to its caller instead of crashing."""


class InputError(AppError):
    """The input cannot be opened as given (no such file, a malformed --field)."""


class OutputDirError(AppError):
    """The --output-dir cannot be created or written; nothing was run."""


class JudgeSetupError(AppError):
    """The judge (or the model under test) cannot be resolved: unknown profile, no weights."""


class ClusterSetupError(AppError):
    """--cluster was given but Ray is missing, the value is malformed or the cluster is down."""


class ProbeFileError(AppError):
    """A probe file has bad lines; one RecordError per problem, nothing was generated."""

    def __init__(self, path: Path, errors: list[RecordError]) -> None:
        self.path = path
        self.errors = errors
        super().__init__(f"{len(errors)} problem(s) in {path}")
