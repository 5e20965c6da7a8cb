"""Typed failures of the application services; the CLI maps each to its message and exit code.

They carry the user-facing text already, so the CLI and the library say the same thing. A
failure that comes with several problems (a probe file, a label file, a folder that no longer
matches its manifest) lists them in `details`; the message is the one line said last.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from nexagauge_local.records import RecordError


class AppError(Exception):
    """Base of the failures a service reports to its caller instead of crashing."""

    def __init__(self, message: str, details: Sequence[str] = ()) -> None:
        self.details = list(details)
        super().__init__(message)


class InputError(AppError):
    """The input cannot be opened as given (no such file, a malformed --field)."""


class OutputDirError(AppError):
    """The --output-dir cannot be created or written; nothing was run."""


class CacheError(AppError):
    """A cache under --cache-dir (judge answers, embeddings) refused a write part-way (a full
    disk); what it holds is intact."""


class JudgeSetupError(AppError):
    """The judge (or the model under test) cannot be resolved: unknown profile, no weights."""


class ClusterSetupError(AppError):
    """--cluster was given but Ray is missing, the value is malformed or the cluster is down."""


class ProbeFileError(AppError):
    """A probe file has bad lines; one RecordError per problem, nothing was generated."""

    def __init__(self, path: Path, errors: list[RecordError]) -> None:
        self.path = path
        self.errors = errors
        super().__init__(f"{len(errors)} problem(s) in {path}; nothing was generated.",
                         [str(err) for err in errors])


class RunInputError(AppError):
    """compare or gate cannot use a run directory or the policy file (the message names the
    file, and the line of a bad rule); nothing was written."""


class RunDirError(AppError):
    """report, export or agreement: OUTDIR is not a finished run, or one of its files is
    unreadable."""


class ExportError(AppError):
    """The export format cannot be written here (parquet without pyarrow)."""


class LabelFileError(AppError):
    """A human-label file has problems, one `file:line: field: message` per detail; nothing
    was written."""

    def __init__(self, path: Path, problems: Sequence[str]) -> None:
        self.path = path
        super().__init__(f"{len(problems)} problem(s) in {path}; nothing was written.", problems)


class AuditSetupError(AppError):
    """keys, sign or verify cannot start: a key exists or is unreadable, no manifest to sign,
    a --model that names no weights."""


class ReproduceSetupError(AppError):
    """No readable manifest, no input to re-read: nothing can be re-run (exit 2)."""


class CheckFailed(AppError):
    """Base of the failures that are a check's negative answer rather than a set-up problem:
    the CLI exits 1 for them, as for a failed verify."""


class ReproduceRefused(CheckFailed):
    """The input or the judge weights are not the ones the manifest names (exit 1)."""


class ReportRefused(CheckFailed):
    """OUTDIR no longer matches its manifest; `details` say how (exit 1)."""
