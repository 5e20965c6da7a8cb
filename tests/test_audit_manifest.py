from __future__ import annotations

import json

import pytest

from nexagauge_local.audit import (
    MANIFEST_NAME,
    SIGNATURE_NAME,
    ManifestError,
    collect_host,
    hash_input,
    hash_outputs,
    package_versions,
    read_manifest,
    write_manifest,
)
from nexagauge_local.audit.hashing import sha256_file
from nexagauge_local.audit.inputs import hash_records
from tests.test_audit_helpers import make_output, make_run


def test_manifest_holds_every_fact(tmp_path):
    run = make_run(tmp_path)
    m = read_manifest(run["out"])
    assert m.input is not None and m.judge is not None
    assert m.input.sha256 == sha256_file(run["input"])
    assert [(r.line, r.case_id) for r in m.iter_records(run["out"])] == [
        (1, "c1"), (2, "c2"), (4, "case-3")
    ]
    assert m.judge.profile == "tiny" and m.judge.grammar_engine == "outlines" and m.judge.demo
    assert {w.file for w in m.judge.weights} == {
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    }
    assert m.judge.tokenizer_sha256 and m.judge.chat_template_sha256
    assert m.prompts[0].version == "grounding/v1" and len(m.prompts[0].template_sha256) == 64
    assert m.schemas[0].schema_id == "GroundingVerdicts"
    assert m.settings["output_dir"] == str(run["out"])  # paths become strings
    assert m.argv[1] == "run"
    assert m.started_at < m.ended_at
    paths = [o.path for o in m.iter_outputs(run["out"])]
    assert paths == sorted(paths)
    assert "case_report/c1.json" in paths and "report.html" in paths
    assert MANIFEST_NAME not in paths and not any(p.startswith("manifest.") for p in paths)
    assert m.outputs.count == len(paths) and m.input.records.count == 3


def test_manifest_bytes_are_stable(tmp_path):
    run = make_run(tmp_path)
    before = (run["out"] / MANIFEST_NAME).read_bytes()
    write_manifest(run["out"], read_manifest(run["out"]))
    assert (run["out"] / MANIFEST_NAME).read_bytes() == before
    data = json.loads(before)
    assert list(data) == sorted(data)


def test_outputs_exclude_manifest_and_signature(tmp_path):
    out = make_output(tmp_path / "out")
    (out / MANIFEST_NAME).write_text("{}")
    (out / SIGNATURE_NAME).write_text("x")
    paths = {o.path for o in hash_outputs(out)}
    assert MANIFEST_NAME not in paths and SIGNATURE_NAME not in paths
    assert "metrics/grounding.json" in paths


def test_read_manifest_rejects_missing_bad_and_unknown(tmp_path):
    with pytest.raises(ManifestError, match="no manifest"):
        read_manifest(tmp_path)
    (tmp_path / MANIFEST_NAME).write_text("{")
    with pytest.raises(ManifestError, match="not valid JSON"):
        read_manifest(tmp_path)
    (tmp_path / MANIFEST_NAME).write_text(json.dumps({"schema_version": "other/9"}))
    with pytest.raises(ManifestError, match="schema_version"):
        read_manifest(tmp_path)
    run = make_run(tmp_path / "r")
    data = json.loads((run["out"] / MANIFEST_NAME).read_text())
    data["surprise"] = 1
    (run["out"] / MANIFEST_NAME).write_text(json.dumps(data))
    with pytest.raises(ManifestError, match="surprise"):
        read_manifest(run["out"])


def test_hash_records_json_and_csv(tmp_path):
    j = tmp_path / "d.json"
    j.write_text(json.dumps([{"id": "a", "output": "x"}, {"output": "y"}]))
    recs = hash_records(j)
    assert [(r.index, r.line, r.case_id) for r in recs] == [(0, None, "a"), (1, None, None)]
    # key order and whitespace do not change a JSON array record's hash
    j.write_text(json.dumps([{"output": "x", "id": "a"}, {"output": "y"}], indent=4))
    assert [r.sha256 for r in hash_records(j)] == [r.sha256 for r in recs]
    c = tmp_path / "d.csv"
    c.write_text('case_id,output\nk1,hello\nk2,"multi\nline"\n')
    facts = hash_input(c, into=tmp_path)
    assert facts.format == "csv"
    rows = (tmp_path / facts.records.path).read_text().splitlines()
    assert [(json.loads(r)["line"], json.loads(r)["case_id"]) for r in rows] == [(2, "k1"), (4, "k2")]


def test_jsonl_invalid_line_is_still_tracked(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text('{"id": "a"}\nnot json\n')
    recs = hash_records(p)
    assert [(r.line, r.case_id) for r in recs] == [(1, "a"), (2, None)]


def test_host_and_packages():
    host = collect_host()
    assert host.python and host.cpu_count >= 1 and isinstance(host.gpus, list)
    versions = package_versions(["pydantic", "no-such-package-xyz"])
    assert "pydantic" in versions and "no-such-package-xyz" not in versions
