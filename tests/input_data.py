"""The records the input-format tests write in every format, and the writers.

Every format holds the same three records, so a run over any of them must give the case
reports a run over the plain JSONL gives (tests/test_input_formats.py).
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import lzma
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from nexagauge_local.cli import main

RECORDS: list[dict[str, Any]] = [
    {"case_id": "r1", "input": "Where did the cat sit?", "output": "The cat sat on the mat.",
     "context": "The cat sat on the mat all day.", "reference": "A cat sat on the mat."},
    # no case_id: the id is generated from the texts, the same in every format
    {"input": "What is the capital of France?", "output": "Paris is the capital of France.",
     "reference": "The capital of France is Paris."},
    {"case_id": "r3", "output": "Water boils at 100 degrees Celsius at sea level.",
     "reference": "At sea level water boils at 100 C."},
]
COLUMNS = ("case_id", "input", "output", "context", "reference")


def jsonl_bytes(records: list[dict[str, Any]] = RECORDS) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def csv_bytes(records: list[dict[str, Any]] = RECORDS, delimiter: str = ",") -> bytes:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, delimiter=delimiter, lineterminator="\n")
    w.writeheader()
    for r in records:
        w.writerow(r)
    return buf.getvalue().encode()


def compress(data: bytes, codec: str) -> bytes:
    if codec == "gzip":
        return gzip.compress(data)
    if codec == "bz2":
        return bz2.compress(data)
    if codec == "xz":
        return lzma.compress(data)
    import zstandard

    return zstandard.ZstdCompressor().compress(data)


def table(records: list[dict[str, Any]] = RECORDS) -> Any:
    """The records as an Arrow table whose columns are every record's keys (a key a record
    lacks is null there, as in any table)."""
    pa = pytest.importorskip("pyarrow")
    keys = list(dict.fromkeys(k for r in records for k in r))
    return pa.Table.from_pydict({k: [r.get(k) for r in records] for k in keys})


def write_parquet(path: Path, records: list[dict[str, Any]] = RECORDS, **kw: Any) -> Path:
    import pyarrow.parquet as pq

    pq.write_table(table(records), path, **kw)
    return path


def write_arrow(path: Path, records: list[dict[str, Any]] = RECORDS, *, stream: bool) -> Path:
    """An Arrow IPC file, or (stream=True) an IPC stream as Hugging Face `datasets` writes."""
    import pyarrow as pa

    t = table(records)
    with pa.OSFile(str(path), "wb") as sink:
        writer = pa.ipc.new_stream(sink, t.schema) if stream else pa.ipc.new_file(sink, t.schema)
        with writer:
            for batch in t.to_batches(max_chunksize=1):
                writer.write_batch(batch)
    return path


def write_save_to_disk(folder: Path, records: list[dict[str, Any]] = RECORDS) -> Path:
    """A `datasets` save_to_disk folder as version 2/3 writes it: Arrow stream shards listed
    in state.json (the second shard listed first on disk by name would be wrong: the order
    is state.json's), dataset_info.json beside them."""
    folder.mkdir(parents=True)
    names = ["data-00000-of-00002.arrow", "data-00001-of-00002.arrow"]
    write_arrow(folder / names[0], records[:2], stream=True)
    write_arrow(folder / names[1], records[2:], stream=True)
    (folder / "state.json").write_text(json.dumps({
        "_data_files": [{"filename": n} for n in names], "_fingerprint": "f00d",
        "_format_columns": None, "_format_kwargs": {}, "_format_type": None,
        "_output_all_columns": False, "_split": "train"}))
    (folder / "dataset_info.json").write_text(json.dumps({"citation": "", "features": {}}))
    return folder


# ---------------------------------------------------------------- the CLI


def invoke(args: list[Any], **kw: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False, **kw)


def run_refmatch(input_path: Any, out: Path, *extra: Any, **kw: Any) -> Result:
    return invoke(["run", "refmatch", "--input", input_path, "--output-dir", out, "-q",
                   "--cache-dir", out.parent / "cache", *extra], **kw)


def case_reports(out: Path) -> dict[str, Any]:
    """file name -> case report, for comparing two runs' reports whole."""
    return {p.name: json.loads(p.read_text(encoding="utf-8"))
            for p in sorted((out / "case_report").glob("*.json"))}


def chat_record(r: dict[str, Any], parts: bool = False) -> dict[str, Any]:
    """`r` as an OpenAI chat transcript: a system prompt, the input as the user turn, the
    context as a tool result, the output as the last assistant turn (as content parts when
    `parts`); case_id and reference stay flat fields."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Answer briefly."}]
    if "input" in r:
        messages.append({"role": "user", "content": r["input"]})
    if "context" in r:
        messages += [{"role": "assistant", "content": None,
                      "tool_calls": [{"id": "t1", "type": "function",
                                      "function": {"name": "search", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": "t1", "content": r["context"]}]
    answer: Any = [{"type": "text", "text": r["output"]}] if parts else r["output"]
    messages.append({"role": "assistant", "content": answer})
    flat = {k: v for k, v in r.items() if k in ("case_id", "reference")}
    return {**flat, "messages": messages}
