"""Open a dataset the way `--input` names it: a file, or '-' for JSONL on stdin."""

from __future__ import annotations

from pathlib import Path

from nexagauge_local.app.errors import InputError
from nexagauge_local.dataset import Dataset
from nexagauge_local.graph import BLOCKS
from nexagauge_local.records import check_file, parse_field_map, spool_stdin


def open_dataset(input_path: str, fields: tuple[str, ...], limit: int | None, tmp: Path) -> Dataset:
    """The dataset at `input_path` with `--field LOGICAL=COLUMN` mappings applied. stdin is
    spooled into `tmp` first, so it can be validated and then run like a file."""
    try:
        field_map = parse_field_map(fields, BLOCKS)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if input_path == "-":
        return Dataset(spool_stdin(tmp), field_map, limit, display="<stdin>", fmt="jsonl",
                       blocks=BLOCKS)
    path = Path(input_path)
    if not path.exists():
        raise InputError(f"--input {input_path}: no such file")
    check_file(path, input_path)  # a directory, a device, an empty file: one DatasetError line
    return Dataset(path, field_map, limit, blocks=BLOCKS)
