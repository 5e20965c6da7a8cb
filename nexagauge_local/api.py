"""`evaluate`: the library API over the same run service the CLI uses."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nexagauge_local.app.run import run
from nexagauge_local.dataset import Dataset
from nexagauge_local.graph import BLOCKS
from nexagauge_local.readers.frames import MemoryRows
from nexagauge_local.records import parse_field_map
from nexagauge_local.runner import RunOutcome
from nexagauge_local.settings import RunSettings


def evaluate(
    records: Iterable[Mapping[str, Any]] | Any | str | Path,
    target: str = "eval",
    output_dir: str | Path | None = None,
    **settings: Any,
) -> RunOutcome:
    """Evaluate records and return the outcome.

    `records`: a path (any format `--input` reads: JSON, JSONL, CSV, Parquet, Arrow, a
    Hugging Face save_to_disk folder, compressed or not), a pandas or polars DataFrame, or an
    iterable of dicts (a list, a `datasets.Dataset`, a generator). In-memory records are read
    where they are, never written to a file; a generator is kept as a list, since a run reads
    its input more than once.

    Keyword settings are RunSettings fields (model, node_models, backend, gpu_ids, cache_dir,
    on_error, limit, start, end, field_map, ...); `field_map` maps logical fields to columns as
    `--field` does (`field_map={"output": "response.text"}`), and raises ValueError for an
    unknown one; `node_models={"redteam": PROFILE}` gives a node its own judge.
    Case reports are returned in `outcome.case_reports` and, with output_dir, written there too.
    Raises app.errors.JudgeSetupError / ClusterSetupError when an LLM target's judge cannot
    work, and records.RecordsError for bad records with on_error="fail".

        >>> from nexagauge_local import evaluate
        >>> out = evaluate([{"output": "Paris.", "reference": "Paris"}], target="refmatch")
    """
    run_settings = RunSettings(
        target=target, output_dir=Path(output_dir) if output_dir else None, progress=False, **settings
    )
    field_map = parse_field_map([f"{k}={v}" for k, v in run_settings.field_map.items()], BLOCKS)
    limit = run_settings.limit
    if isinstance(records, (str, Path)):
        dataset = Dataset(Path(records), field_map, limit, blocks=BLOCKS, start=run_settings.start,
                          end=run_settings.end)
    else:
        rows = MemoryRows(records)
        dataset = Dataset(Path(rows.name), field_map, limit, display=rows.name, blocks=BLOCKS,
                          rows=rows, origin="memory", start=run_settings.start,
                          end=run_settings.end)
    return run(run_settings, lambda tmp: dataset, keep_reports=True).outcome
