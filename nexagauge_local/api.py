"""`evaluate`: the library API over the same run service the CLI uses."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nexagauge_local.app.run import run
from nexagauge_local.dataset import Dataset
from nexagauge_local.graph import BLOCKS
from nexagauge_local.runner import RunOutcome
from nexagauge_local.settings import RunSettings


def evaluate(
    records: Iterable[Mapping[str, Any]] | str | Path,
    target: str = "eval",
    output_dir: str | Path | None = None,
    **settings: Any,
) -> RunOutcome:
    """Evaluate records (dicts, or a path to a JSON/JSONL/CSV file) and return the outcome.

    Keyword settings are RunSettings fields (model, backend, gpu_ids, cache_dir, on_error, ...).
    Case reports are returned in `outcome.case_reports` and, with output_dir, written there too.
    Raises app.errors.JudgeSetupError / ClusterSetupError when an LLM target's judge cannot
    work, and records.RecordsError for bad records with on_error="fail".

        >>> from nexagauge_local import evaluate
        >>> out = evaluate([{"output": "Paris.", "reference": "Paris"}], target="refmatch")
    """
    run_settings = RunSettings(
        target=target, output_dir=Path(output_dir) if output_dir else None, progress=False, **settings
    )

    def open_input(tmp: Path) -> Dataset:
        if isinstance(records, (str, Path)):
            return Dataset(Path(records), blocks=BLOCKS)
        path = tmp / "records.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for record in records:
                fh.write(json.dumps(dict(record), ensure_ascii=False) + "\n")
        return Dataset(path, display="<records>", blocks=BLOCKS)

    return run(run_settings, open_input, keep_reports=True).outcome
