"""Open a dataset the way `--input` names it: a file, a dataset folder, a pipe, or '-' for stdin.

A pipe (`--input <(zcat data.jsonl.gz)`, a FIFO, `/dev/stdin`) and stdin are spooled into the
run's private folder first (readers/streams.py): the run reads its input more than once, and a
stream only once. Whatever the spool holds is read like a file: compressed or not, any format.
"""

from __future__ import annotations

import sys
from pathlib import Path

from nexagauge_local.app.errors import InputError
from nexagauge_local.dataset import Dataset
from nexagauge_local.graph import BLOCKS
from nexagauge_local.readers.streams import is_stream, spool, spool_path
from nexagauge_local.records import check_file, parse_field_map

STDIN = "<stdin>"


def open_dataset(input_path: str, fields: tuple[str, ...], limit: int | None, tmp: Path, *,
                 start: int = 0, end: int | None = None) -> Dataset:
    """The dataset at `input_path` with `--field LOGICAL=COLUMN` mappings applied, sliced to
    records [start:end][:limit]. stdin and pipes are spooled into `tmp` first, so they can be
    validated and then run like a file."""
    try:
        field_map = parse_field_map(fields, BLOCKS)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if input_path == "-":
        return Dataset(spool_stdin(tmp), field_map, limit, display=STDIN, blocks=BLOCKS,
                       origin="stream", start=start, end=end)
    path = Path(input_path)
    if not path.exists():
        raise InputError(f"--input {input_path}: no such file")
    if is_stream(path):
        return Dataset(spool_path(path, tmp, input_path), field_map, limit, display=input_path,
                       blocks=BLOCKS, origin="stream", start=start, end=end)
    check_file(path, input_path)  # a folder of no dataset, an empty file: one DatasetError line
    return Dataset(path, field_map, limit, blocks=BLOCKS, start=start, end=end)


def spool_stdin(dest_dir: Path) -> Path:
    """`--input -`: stdin's bytes into `dest_dir` (any format the readers know, compressed too)."""
    dest = dest_dir / "stdin"
    spool(sys.stdin.buffer, dest, STDIN)
    return dest
