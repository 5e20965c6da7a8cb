"""What every reader yields and raises: raw records with their position, and the two errors.

Why a module of its own: the readers (one per format family) and the normaliser (records.py)
both need these types, and the readers must not import the normaliser.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nexagauge_local.case import SourceRef


@dataclass(frozen=True)
class RecordError:
    source: SourceRef
    field: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.field}: " if self.field else ""
        return f"{self.source}: {where}{self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.source.file,
            "line": self.source.line,
            "index": self.source.index,
            "field": self.field,
            "reason": self.message,
        }


class RecordsError(Exception):
    """Raised when a dataset cannot be used; carries one RecordError per problem."""

    def __init__(self, errors: list[RecordError]):
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


class DatasetError(RecordsError):
    """The file as a whole cannot be read as a dataset (empty, a directory, not text, wrong shape).

    Why a subclass: these are not bad records that `--on-error skip` could step over, so they are
    raised even in skip mode; being a RecordsError, every caller that reports bad input already
    turns them into `FILE: what is wrong` and exit 2.
    """

    def __init__(self, name: str, message: str, line: int | None = None):
        super().__init__([RecordError(SourceRef(file=name, line=line), None, message)])


@dataclass(frozen=True)
class RawRecord:
    data: dict[str, Any] | None
    source: SourceRef
    error: str | None = None


def require(module: str, name: str, what: str, extra: str | None = None) -> Any:
    """Import an optional package, or one DatasetError line naming the extra that brings it
    (or the package itself, for a dependency that a partial install lost).

    Why not a plain ImportError: the user asked for a file, not a module; the line says which
    file needed what and the one command that fixes it (exit 2, like any unusable input).
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.split(".")[0]
        fix = f"pip install 'nexagauge-local[{extra}]'" if extra else f"pip install {top}"
        raise DatasetError(name, f"reading {what} needs {top}, which is not installed: {fix}"
                           ) from None


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (Arrow's span several), for `FILE: what` lines."""
    return " ".join(str(exc).split()) or type(exc).__name__
