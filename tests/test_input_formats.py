"""Input formats through the real CLI: each gives the case reports of the plain JSONL holding
the same records, and every reader's bad input is one line naming file, row and column.

Runs use `refmatch` (deterministic, no model). The baseline is one run over the plain JSONL.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.input_data import (
    RECORDS,
    chat_record,
    compress,
    csv_bytes,
    jsonl_bytes,
    run_refmatch,
    write_arrow,
    write_parquet,
    write_save_to_disk,
)
from tests.input_data import case_reports as reports

pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The case reports of the plain JSONL."""
    tmp = tmp_path_factory.mktemp("baseline")
    (tmp / "data.jsonl").write_bytes(jsonl_bytes())
    result = run_refmatch(tmp / "data.jsonl", tmp / "out")
    assert result.exit_code == 0, result.output
    got = reports(tmp / "out")
    assert len(got) == len(RECORDS)
    return got


def same_as_baseline(baseline: dict[str, Any], input_path: Any, out: Path, *extra: Any,
                     **kw: Any) -> None:
    result = run_refmatch(input_path, out, *extra, **kw)
    assert result.exit_code == 0, result.output
    assert reports(out) == baseline


# ---------------------------------------------------------------- compressed text


@pytest.mark.parametrize(("codec", "suffix"),
                         [("gzip", ".gz"), ("bz2", ".bz2"), ("xz", ".xz"), ("zstd", ".zst")])
def test_compressed_jsonl(baseline: dict[str, Any], tmp_path: Path, codec: str,
                          suffix: str) -> None:
    path = tmp_path / f"data.jsonl{suffix}"
    path.write_bytes(compress(jsonl_bytes(), codec))
    same_as_baseline(baseline, path, tmp_path / "out")


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_compressed_csv_and_tsv(baseline: dict[str, Any], tmp_path: Path, codec: str) -> None:
    (tmp_path / "data.csv.gz").write_bytes(compress(csv_bytes(), codec))
    same_as_baseline(baseline, tmp_path / "data.csv.gz", tmp_path / "out")
    (tmp_path / "data.tsv.xz").write_bytes(compress(csv_bytes(delimiter="\t"), "xz"))
    same_as_baseline(baseline, tmp_path / "data.tsv.xz", tmp_path / "out2")


def test_compression_is_told_by_content_not_by_name(baseline: dict[str, Any],
                                                    tmp_path: Path) -> None:
    (tmp_path / "records").write_bytes(compress(jsonl_bytes(), "zstd"))  # no name to go by
    same_as_baseline(baseline, tmp_path / "records", tmp_path / "out")
    (tmp_path / "plain.jsonl.gz").write_bytes(jsonl_bytes())  # named gzip, plain text inside
    same_as_baseline(baseline, tmp_path / "plain.jsonl.gz", tmp_path / "out2")
    (tmp_path / "table").write_bytes(compress(csv_bytes(), "bz2"))  # CSV told by its header
    same_as_baseline(baseline, tmp_path / "table", tmp_path / "out3")


@pytest.mark.parametrize("codec", ["gzip", "bz2", "xz", "zstd"])
def test_compressed_file_cut_short_is_one_line(tmp_path: Path, codec: str) -> None:
    blob = compress(jsonl_bytes(RECORDS * 400), codec)
    (tmp_path / "data.jsonl.z").write_bytes(blob[: len(blob) * 2 // 3])
    result = run_refmatch(tmp_path / "data.jsonl.z", tmp_path / "out", "--on-error", "skip")
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"{tmp_path / 'data.jsonl.z'}: the {codec} data is corrupt or cut short")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("codec", "suffix"),
                         [("gzip", ".gz"), ("bz2", ".bz2"), ("xz", ".xz"), ("zstd", ".zst")])
def test_compressed_json_array(baseline: dict[str, Any], tmp_path: Path, codec: str,
                               suffix: str) -> None:
    path = tmp_path / f"data.json{suffix}"
    path.write_bytes(compress(json.dumps(RECORDS, indent=2).encode(), codec))
    same_as_baseline(baseline, path, tmp_path / "out")


def test_utf16_json_array_through_gzip(baseline: dict[str, Any], tmp_path: Path) -> None:
    # the byte-order mark is sniffed after decompression; the array is read as decoded text
    path = tmp_path / "records"
    path.write_bytes(compress(json.dumps(RECORDS, indent=2).encode("utf-16"), "gzip"))
    same_as_baseline(baseline, path, tmp_path / "out")


@pytest.mark.parametrize("codec", [None, "gzip"])
def test_json_array_cut_short_is_one_line_even_when_skipping(tmp_path: Path,
                                                             codec: str | None) -> None:
    text = json.dumps(RECORDS * 400, indent=2).encode()
    cut = text[: len(text) // 2]  # mid-record: the records before it stream, none after
    (tmp_path / "data.json").write_bytes(compress(cut, codec) if codec else cut)
    result = run_refmatch(tmp_path / "data.json", tmp_path / "out", "--on-error", "skip")
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    lines, whole = cut.count(b"\n") + 1, cut.count(b"\n  }")  # indent=2: a record ends so
    assert line.startswith(f"{tmp_path / 'data.json'}:{lines}: invalid JSON ("), line
    assert line.endswith(f") in record [{whole}]"), line
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- columnar


def test_parquet_file(baseline: dict[str, Any], tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "data.parquet", row_group_size=2)  # rows over 2 row groups
    same_as_baseline(baseline, path, tmp_path / "out")


@pytest.mark.parametrize("stream", [False, True], ids=["ipc-file", "ipc-stream"])
def test_arrow_ipc(baseline: dict[str, Any], tmp_path: Path, stream: bool) -> None:
    path = write_arrow(tmp_path / "data.arrow", stream=stream)
    same_as_baseline(baseline, path, tmp_path / "out")


def test_hugging_face_save_to_disk_folder(baseline: dict[str, Any], tmp_path: Path) -> None:
    folder = write_save_to_disk(tmp_path / "ds")
    same_as_baseline(baseline, folder, tmp_path / "out")


def test_folder_of_parquet_shards(baseline: dict[str, Any], tmp_path: Path) -> None:
    folder = tmp_path / "snapshot"
    folder.mkdir()
    write_parquet(folder / "train-00000-of-00002.parquet", RECORDS[:1])
    write_parquet(folder / "train-00001-of-00002.parquet", RECORDS[1:])
    (folder / "README.md").write_text("a dataset card is not data")
    same_as_baseline(baseline, folder, tmp_path / "out")


def test_dataset_dict_folder_names_its_splits(tmp_path: Path) -> None:
    write_save_to_disk(tmp_path / "dd" / "train")
    (tmp_path / "dd" / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "test"]}))
    result = run_refmatch(tmp_path / "dd", tmp_path / "out")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"{tmp_path / 'dd'}: is a Hugging Face DatasetDict folder (splits: train, test); pass "
        f"one split's folder, e.g. --input {tmp_path / 'dd' / 'train'}")


def test_folder_of_several_splits_is_refused(tmp_path: Path) -> None:
    """The `datasets` cache keeps each split's Arrow file side by side: never mixed."""
    folder = tmp_path / "cache"
    folder.mkdir()
    write_arrow(folder / "squad-train.arrow", RECORDS[:2], stream=True)
    write_arrow(folder / "squad-validation.arrow", RECORDS[2:], stream=True)
    result = run_refmatch(folder, tmp_path / "out")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"{folder}: holds the files of several splits (train, validation); pass one split's "
        "file (or a folder holding only its shards)")


def test_bad_parquet_row_names_file_row_and_column(tmp_path: Path) -> None:
    rows = [dict(RECORDS[0]), {"case_id": "bad", "output": None, "reference": "x"},
            dict(RECORDS[2])]
    path = write_parquet(tmp_path / "data.parquet", rows)
    result = run_refmatch(path, tmp_path / "out")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0].startswith(f"{path}[1]: output: missing or empty")
    result = run_refmatch(path, tmp_path / "out", "--on-error", "skip")
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [(e["index"], e["field"]) for e in summary["skipped"]] == [(1, "output")]
    assert summary["cases"]["valid"] == 2


def test_unreadable_parquet_is_one_line(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "data.parquet")
    blob = bytearray(path.read_bytes())
    path.write_bytes(bytes(blob[:4] + b"\0" * 64 + blob[68:]))  # column pages overwritten
    result = run_refmatch(path, tmp_path / "out")
    assert result.exit_code == 2 and "Traceback" not in result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"{path}: ")
    (tmp_path / "fake.parquet").write_text('{"output": "not parquet"}\n')
    result = run_refmatch(tmp_path / "fake.parquet", tmp_path / "out")
    assert result.exit_code == 2
    assert result.stderr.strip().endswith("not a Parquet file (its first bytes are not Parquet's)")


def test_missing_pyarrow_is_one_line_naming_the_extra(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_parquet(tmp_path / "data.parquet")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now fails
    result = run_refmatch(path, tmp_path / "out")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"{path}: reading Parquet needs pyarrow, which is not installed: "
        "pip install 'nexagauge-local[parquet]'")


# ---------------------------------------------------------------- chat and nested columns


def test_chat_transcripts(baseline: dict[str, Any], tmp_path: Path) -> None:
    chats = [chat_record(r, parts=i % 2 == 0) for i, r in enumerate(RECORDS)]
    (tmp_path / "chats.jsonl").write_bytes(jsonl_bytes(chats))
    same_as_baseline(baseline, tmp_path / "chats.jsonl", tmp_path / "out")


def test_chat_transcripts_in_parquet_under_another_name(baseline: dict[str, Any],
                                                        tmp_path: Path) -> None:
    chats = []
    for r in RECORDS:
        c = chat_record(r)
        turns = [{"role": m["role"], "content": m["content"]} for m in c.pop("messages")]
        chats.append({**c, "dialog": turns})
    path = write_parquet(tmp_path / "chats.parquet", chats)
    same_as_baseline(baseline, path, tmp_path / "out", "--field", "messages=dialog")


def test_nested_field_paths(baseline: dict[str, Any], tmp_path: Path) -> None:
    nested = [{"case_id": r.get("case_id"), "reference": r["reference"],
               "request": {"prompt": r.get("input"),
                           "docs": [r["context"]] if "context" in r else None},
               "response": {"choices": [{"message": {"content": r["output"]}}]}}
              for r in RECORDS]
    path = write_parquet(tmp_path / "nested.parquet", nested)
    args = ["--field", "output=response.choices.0.message.content",
            "--field", "input=request.prompt", "--field", "context=request.docs"]
    same_as_baseline(baseline, path, tmp_path / "out", *args)
    (tmp_path / "nested.jsonl").write_bytes(jsonl_bytes(nested))
    same_as_baseline(baseline, tmp_path / "nested.jsonl", tmp_path / "out2", *args)


def test_nested_field_of_the_wrong_type_names_the_path(tmp_path: Path) -> None:
    rows = [{"response": {"text": "fine", "n": 1}}, {"response": {"text": 7, "n": 2}}]
    (tmp_path / "data.jsonl").write_bytes(jsonl_bytes(rows))
    result = run_refmatch(tmp_path / "data.jsonl", tmp_path / "out", "--field",
                          "output=response.text")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"{tmp_path / 'data.jsonl'}:2: response.text: must be text, got int")
    result = run_refmatch(tmp_path / "data.jsonl", tmp_path / "out", "--field",
                          "output=response.txt")
    assert result.stderr.strip().endswith("--field output=response.txt: no record has a "
                                          "column 'response.txt'")


# ---------------------------------------------------------------- pipes and stdin


def test_fifo(baseline: dict[str, Any], tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    blob = compress(jsonl_bytes(), "gzip")

    def feed() -> None:
        with fifo.open("wb") as fh:  # blocks until the run opens the FIFO
            fh.write(blob)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    same_as_baseline(baseline, fifo, tmp_path / "out")
    writer.join(timeout=10)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["input"]["origin"] == "stream" and manifest["input"]["compression"] == "gzip"


def test_stdin_takes_any_format(baseline: dict[str, Any], tmp_path: Path) -> None:
    same_as_baseline(baseline, "-", tmp_path / "out", input=gzip.compress(csv_bytes()))
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["input"] == "<stdin>"
