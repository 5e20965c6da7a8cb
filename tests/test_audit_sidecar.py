"""The manifest's per-record lists live in hashed sidecar files, streamed both ways.

Why structural tests and not a memory ceiling: a ceiling would be timing- and host-fragile;
what bounds the memory is that nothing builds a list of every record or every output file, and
that is what is asserted here (streams, not lists; the sort spills to disk past a chunk).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from nexagauge_local.audit import MANIFEST_NAME, ManifestError, hash_outputs, read_manifest, verify
from nexagauge_local.audit.hashing import sha256_file
from nexagauge_local.audit.inputs import hash_input, hash_records
from nexagauge_local.audit.sidecar import (
    OUTPUTS_NAME,
    RECORDS_NAME,
    sorted_files,
)
from tests.test_audit_helpers import INPUT_LINES, make_run


def _tree(root, names):
    for name in names:
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(name)


def test_sorted_files_spills_past_a_chunk_and_keeps_path_order(tmp_path, monkeypatch):
    names = [f"case_report/c{i}.json" for i in range(23)] + ["a-b", "a/b", "z", "metrics/x.json"]
    _tree(tmp_path, names)
    spilled = []
    import nexagauge_local.audit.sidecar as sc

    real = sc._spill
    monkeypatch.setattr(sc, "_spill", lambda run, stack: spilled.append(len(run)) or real(run, stack))
    got = sorted_files(tmp_path, chunk=5)
    assert isinstance(got, Iterator)
    assert list(got) == sorted(names)
    assert spilled and max(spilled) == 5  # never more than a chunk of names sorted in memory


def test_hash_outputs_is_a_stream_in_path_order(tmp_path):
    _tree(tmp_path, ["b.json", "a/c.json", MANIFEST_NAME, OUTPUTS_NAME, RECORDS_NAME])
    out = hash_outputs(tmp_path)
    assert isinstance(out, Iterator) and not isinstance(out, list)
    assert [o.path for o in out] == ["a/c.json", "b.json"]


def test_run_ids_are_matched_by_position_from_a_stream(tmp_path):
    """collect_input hands the run's ids as a generator (no map of every position)."""
    inp = tmp_path / "d.jsonl"
    inp.write_text("\n".join(INPUT_LINES) + "\n")
    pairs = iter([(1, "first"), (4, "case-3"), (4, "case-3b"), (99, "beyond")])
    facts = hash_input(inp, into=tmp_path, case_ids=pairs)
    rows = [json.loads(line) for line in (tmp_path / RECORDS_NAME).read_text().splitlines()]
    assert [(r["line"], r["case_id"]) for r in rows] == [(1, "first"), (2, "c2"), (4, "case-3b")]
    assert facts.records.count == 3
    assert [r["sha256"] for r in rows] == [r.sha256 for r in hash_records(inp)]


def test_edited_outputs_sidecar_is_a_difference(tmp_path):
    """Hiding a changed case report by editing the list is caught: the manifest hashes it."""
    run = make_run(tmp_path)
    out = run["out"]
    case = out / "case_report" / "c2.json"
    case.write_text(case.read_text().replace("0", "1"))
    side = out / OUTPUTS_NAME
    m = read_manifest(out)
    lines = []
    for o in m.iter_outputs(out):
        if o.path == "case_report/c2.json":
            o = o.model_copy(update={"sha256": sha256_file(case), "size": case.stat().st_size})
        lines.append(json.dumps(o.model_dump(), sort_keys=True, separators=(",", ":")))
    side.write_text("\n".join(lines) + "\n")
    rep = verify(out)
    assert [d.kind for d in rep.differences] == ["manifest"]
    assert rep.differences[0].file == OUTPUTS_NAME and "changed" in rep.differences[0].message


def test_missing_sidecars(tmp_path):
    run = make_run(tmp_path)
    (run["out"] / OUTPUTS_NAME).unlink()
    rep = verify(run["out"])
    assert [(d.kind, d.file) for d in rep.differences] == [("manifest", OUTPUTS_NAME)]
    assert "missing" in rep.differences[0].message
    (run["out"] / RECORDS_NAME).unlink()
    run["input"].write_text(run["input"].read_text() + '{"id": "new", "output": "x"}\n')
    rep = verify(run["out"], input_path=run["input"])
    assert ("manifest", RECORDS_NAME) in [(d.kind, d.file) for d in rep.differences]


def test_sidecar_line_that_is_not_a_row(tmp_path):
    run = make_run(tmp_path)
    m = read_manifest(run["out"])
    side = run["out"] / OUTPUTS_NAME
    side.write_text(side.read_text() + "not json\n")
    # the hash no longer matches, and the bad line is named rather than a traceback
    msgs = [d.message for d in verify(run["out"]).differences]
    assert any(f"{OUTPUTS_NAME}: changed" in msg for msg in msgs)
    assert any(f"{OUTPUTS_NAME}: line {m.outputs.count + 1}" in msg for msg in msgs)


def test_an_earlier_manifest_layout_is_named(tmp_path):
    (tmp_path / MANIFEST_NAME).write_text(json.dumps({"schema_version": "nexagauge-local.manifest/1"}))
    with pytest.raises(ManifestError, match="earlier layout"):
        read_manifest(tmp_path)


def test_manifest_size_does_not_grow_with_the_run(tmp_path):
    """manifest.json holds counts and hashes of the lists, never the lists."""
    run = make_run(tmp_path)
    before = (run["out"] / MANIFEST_NAME).stat().st_size
    for i in range(200):
        (run["out"] / "case_report" / f"extra{i}.json").write_text("{}")
    from nexagauge_local.audit import RunRecord, finalize_run

    m = read_manifest(run["out"])
    finalize_run(run["out"], RunRecord(started_at=m.started_at, argv=m.argv, settings=m.settings,
                                       input=m.input, judge=m.judge, prompts=m.prompts,
                                       schemas=m.schemas),
                 host=m.host, packages=m.packages)
    after = read_manifest(run["out"])
    assert after.outputs.count == m.outputs.count + 200
    assert abs(os.path.getsize(run["out"] / MANIFEST_NAME) - before) < 40  # digits, dates
