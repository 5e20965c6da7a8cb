"""readers/ and chat.py piece by piece: sniffing by content, chat mapping, nested columns,
JSON-ready table values, and flat memory while streaming a large Parquet file or JSON array."""

from __future__ import annotations

import datetime as dt
import decimal
import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nexagauge_local.case import Case, SourceRef
from nexagauge_local.chat import chat_texts
from nexagauge_local.graph import BLOCKS
from nexagauge_local.readers import DatasetError, compression_of, detect_format, iter_raw
from nexagauge_local.readers.tables import jsonable
from nexagauge_local.records import RawRecord, normalise, resolve_column
from tests.input_data import compress, csv_bytes, jsonl_bytes

REPO = Path(__file__).resolve().parents[1]


def norm(data: dict[str, Any], **fmap: str) -> Case | list[str]:
    result = normalise(RawRecord(data, SourceRef(file="d.jsonl", line=1)), fmap, blocks=BLOCKS)
    return result if isinstance(result, Case) else [str(e) for e in result]


# ---------------------------------------------------------------- sniffing


@pytest.mark.parametrize("codec", ["gzip", "bz2", "xz", "zstd"])
def test_compression_by_magic_bytes(tmp_path: Path, codec: str) -> None:
    (tmp_path / "blob").write_bytes(compress(b'{"output": "x"}\n', codec))
    assert compression_of(tmp_path / "blob") == codec
    assert detect_format(tmp_path / "blob") == "jsonl"


def test_text_that_begins_like_bz2_is_text(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text("BZh9,output\n1,x\n")  # "BZh" + digit, no block magic
    assert compression_of(tmp_path / "d.csv") is None
    assert [r.data for r in iter_raw(tmp_path / "d.csv")] == [{"BZh9": "1", "output": "x"}]


@pytest.mark.parametrize(("content", "fmt"), [
    (b'[{"output": "x"}]', "json"), (b'{"output": "x"}\n', "jsonl"),
    (b"output,reference\nx,y\n", "csv"), (b"output\treference\nx\ty\n", "csv"),
    (b"nope\n", "jsonl")])
def test_a_nameless_file_is_told_by_its_content(tmp_path: Path, content: bytes,
                                                fmt: str) -> None:
    (tmp_path / "63").write_bytes(content)  # what a pipe is called: /dev/fd/63
    assert detect_format(tmp_path / "63") == fmt


def test_tsv_without_a_name_splits_on_tabs(tmp_path: Path) -> None:
    (tmp_path / "63").write_bytes(compress(csv_bytes(delimiter="\t"), "gzip"))
    assert next(iter_raw(tmp_path / "63")).data["case_id"] == "r1"


def test_parquet_named_but_not_parquet(tmp_path: Path) -> None:
    (tmp_path / "d.parquet").write_bytes(jsonl_bytes())
    with pytest.raises(DatasetError, match="not a Parquet file"):
        detect_format(tmp_path / "d.parquet")


# ---------------------------------------------------------------- chat


def test_chat_takes_the_last_assistant_turn_and_the_user_turn_before_it() -> None:
    chat = chat_texts([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "second question"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
        {"role": "tool", "content": "doc one"},
        {"role": "tool", "content": [{"type": "text", "text": "doc two"}]},
        {"role": "assistant", "content": [{"type": "output_text", "text": "second"},
                                          {"type": "image_url", "image_url": {"url": "x"}},
                                          {"type": "text", "text": "answer"}]},
        {"role": "user", "content": "thanks"},  # after the answer: not its input
    ], "messages")
    assert (chat.input, chat.output, chat.context) == (
        "second question", "second\nanswer", "doc one\n\ndoc two")
    assert not chat.errors


def test_chat_sharegpt_and_anthropic_tool_results() -> None:
    chat = chat_texts([
        {"from": "human", "value": "q"},
        {"role": "user", "content": [{"type": "tool_result", "content": "retrieved"}]},
        {"from": "gpt", "value": "a"},
    ], "conversations")
    assert (chat.input, chat.output, chat.context) == ("q", "a", "retrieved")


@pytest.mark.parametrize(("messages", "error"), [
    ("hello", "messages: must be a list of messages ({role, content}), got str"),
    (["hi"], "messages.0: must be an object with role and content, got str"),
    ([{"content": "x"}], "messages.0.role: missing; expected user, assistant, tool or system"),
    ([{"role": "user", "content": 5}],
     "messages.0.content: must be text or a list of content parts, got int"),
    ([{"role": "user", "content": [{"type": "text", "text": 5}]}],
     "messages.0.content.0.text: must be text, got int"),
])
def test_chat_errors_name_the_message(messages: Any, error: str) -> None:
    assert norm({"messages": messages}) == [f"d.jsonl:1: {error}"]


def test_flat_fields_win_and_messages_fill_the_rest() -> None:
    case = norm({"completion": "flat answer",
                 "messages": [{"role": "user", "content": "q"},
                              {"role": "assistant", "content": "transcript answer"}]})
    assert isinstance(case, Case)
    assert (case.output, case.input) == ("flat answer", "q")
    assert "messages" not in case.extra


def test_chat_without_an_assistant_turn() -> None:
    assert norm({"messages": [{"role": "user", "content": "q"}]}) == [(
        "d.jsonl:1: output: missing or empty (looked for: output, generation, response, answer, "
        "completion, actual_output, and an assistant turn in messages)")]


def test_field_remaps_messages() -> None:
    case = norm({"log": [{"role": "assistant", "content": "a"}]}, messages="log")
    assert isinstance(case, Case) and case.output == "a"


# ---------------------------------------------------------------- nested columns


def test_resolve_column() -> None:
    record = {"Response": {"Choices": [{"text": "a"}, {"text": "b"}]}, "x.y": 1}
    assert resolve_column(record, "response.choices.1.text") == ("response.choices.1.text", "b")
    assert resolve_column(record, "response.choices.-1.text")[1] == "b"
    assert resolve_column(record, "x.y") == ("x.y", 1)  # a dotted key is matched whole first
    assert resolve_column(record, "response.choices.2.text") == (None, None)
    assert resolve_column(record, "response.missing") == (None, None)


def test_jsonable_table_values() -> None:
    value = {"t": dt.datetime(2026, 1, 2, 3, 4, 5), "d": decimal.Decimal("1.10"),
             "b": b"text", "raw": b"\xff\x00", "m": [("k", 1)], "l": [1, [2]]}
    assert jsonable(value) == {"t": "2026-01-02T03:04:05", "d": "1.10", "b": "text",
                               "raw": "/wA=", "m": {"k": 1}, "l": [1, [2]]}
    json.dumps(jsonable(value))


def test_parquet_timestamps_are_text(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"output": ["x"], "at": [dt.datetime(2026, 1, 1)]}), tmp_path / "d.pq")
    (raw,) = iter_raw(tmp_path / "d.pq")
    assert raw.data == {"output": "x", "at": "2026-01-01T00:00:00"}


# ---------------------------------------------------------------- streaming memory

_MEASURE = """
import json, sys, tracemalloc
from pathlib import Path
import pyarrow as pa
from nexagauge_local.readers import iter_raw
tracemalloc.start()
rows = sum(1 for raw in iter_raw(Path(sys.argv[1])) if raw.data is not None)
print(json.dumps({"rows": rows, "python": tracemalloc.get_traced_memory()[1],
                  "arrow": pa.default_memory_pool().max_memory()}))
"""


def _peak(path: Path) -> dict[str, int]:
    proc = subprocess.run([sys.executable, "-c", _MEASURE, str(path)], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=True)
    return json.loads(proc.stdout)


def test_a_large_parquet_file_streams_in_flat_memory(tmp_path: Path) -> None:
    """Rows of ~1 KB in one row group, as pyarrow writes by default: 10x the rows must not
    take more memory, and the peak stays a small part of the decoded data (100 MB)."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    filler = "The committee reported a record harvest in the northern region. " * 15
    for n, name in ((10_000, "small"), (100_000, "large")):
        table = pa.table({"case_id": [f"c{i}" for i in range(n)],
                          "output": [f"{i} {filler}" for i in range(n)],
                          "reference": [f"{filler} {i}" for i in range(n)]})
        pq.write_table(table, tmp_path / f"{name}.parquet", row_group_size=1 << 20)
        del table
    small, large = _peak(tmp_path / "small.parquet"), _peak(tmp_path / "large.parquet")
    assert (small["rows"], large["rows"]) == (10_000, 100_000)
    small_total, large_total = small["python"] + small["arrow"], large["python"] + large["arrow"]
    assert large_total < small_total * 1.5 + (4 << 20), (small, large)
    assert large_total < 40 << 20, large  # the decoded rows are ~190 MB


_MEASURE_TEXT = """
import json, sys, tracemalloc
from pathlib import Path
from nexagauge_local.readers import iter_raw
tracemalloc.start()
rows = sum(1 for raw in iter_raw(Path(sys.argv[1])) if raw.data is not None)
print(json.dumps({"rows": rows, "python": tracemalloc.get_traced_memory()[1]}))
"""


def _text_peak(path: Path) -> dict[str, int]:
    proc = subprocess.run([sys.executable, "-c", _MEASURE_TEXT, str(path)], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=True)
    return json.loads(proc.stdout)


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_a_large_json_array_streams_in_flat_memory(tmp_path: Path, suffix: str) -> None:
    """Pretty-printed records of ~0.7 KB: 10x the records must not take more memory, and the
    peak stays a small part of the parsed array (parsed whole, 100k records held ~170 MB)."""
    filler = "The committee reported a record harvest in the northern region. " * 5
    for n, name in ((10_000, "small"), (100_000, "large")):
        records = ({"case_id": f"c{i}", "output": f"{i} {filler}", "reference": f"{filler} {i}",
                    "score": i / 7} for i in range(n))
        opener = gzip.open if suffix.endswith(".gz") else open
        with opener(tmp_path / f"{name}{suffix}", "wt", encoding="utf-8") as fh:
            fh.write("[\n")
            for i, record in enumerate(records):
                fh.write((",\n" if i else "") + json.dumps(record, indent=2))
            fh.write("\n]\n")
    small, large = _text_peak(tmp_path / f"small{suffix}"), _text_peak(tmp_path / f"large{suffix}")
    assert (small["rows"], large["rows"]) == (10_000, 100_000)
    assert large["python"] < small["python"] * 1.5 + (1 << 20), (small, large)
    assert large["python"] < 8 << 20, large
