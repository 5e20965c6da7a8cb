"""verify(): every kind of tampering is found, named by file, and fails the check (exit 1)."""

from __future__ import annotations

import base64
import json

from nexagauge_local.audit import MANIFEST_NAME, SIGNATURE_NAME, new_keypair, verify
from tests.test_audit_helpers import INPUT_LINES, make_run


def _kinds(report):
    return [d.kind for d in report.differences]


def test_untouched_run_verifies(tmp_path):
    priv, pub = new_keypair(tmp_path / "keys")
    run = make_run(tmp_path, sign_key=priv)
    rep = verify(run["out"], input_path=run["input"], model_path=run["weights"], pubkey=pub)
    assert rep.ok, rep.lines()
    assert rep.checked == ["signature", "outputs", "input", "weights"]
    assert rep.signature == "valid" and rep.key_fingerprint
    assert rep.lines()[-1].startswith("OK")


def test_tampered_case_report(tmp_path):
    run = make_run(tmp_path)
    p = run["out"] / "case_report" / "c2.json"
    data = json.loads(p.read_text())
    data["grounding"]["metrics"][0]["score"] = 1.0
    p.write_text(json.dumps(data, indent=2))
    rep = verify(run["out"])
    assert not rep.ok
    [d] = rep.differences
    assert d.kind == "changed_file" and d.file == "case_report/c2.json"
    assert "case_report/c2.json" in d.message and d.expected != d.actual
    assert rep.lines()[-1].startswith("FAILED")


def _verify_edited_input(tmp_path, index, old, new):
    """verify a fresh run against its input with `old` replaced by `new` on line index+1."""
    run = make_run(tmp_path)
    lines = list(INPUT_LINES)
    lines[index] = lines[index].replace(old, new)
    run["input"].write_text("\n".join(lines) + "\n")
    return verify(run["out"], input_path=run["input"])


def test_changed_input_record_names_case_and_line(tmp_path):
    rep = _verify_edited_input(tmp_path, 1, "cheese", "green cheese")
    assert _kinds(rep) == ["input_changed", "record_changed"]
    rec = rep.differences[1]
    assert rec.file == "data.jsonl"
    assert "data.jsonl" in rec.message and "c2" in rec.message and "line 2" in rec.message


def test_changed_record_without_id_uses_runner_case_id(tmp_path):
    rep = _verify_edited_input(tmp_path, 3, "No id", "Still no id")
    assert "case-3" in rep.differences[1].message and "line 4" in rep.differences[1].message


def test_inserted_and_removed_records(tmp_path):
    run = make_run(tmp_path)
    lines = [
        INPUT_LINES[0],
        json.dumps({"id": "new", "output": "x"}),
        INPUT_LINES[1],
        INPUT_LINES[3],
    ]
    run["input"].write_text("\n".join(lines) + "\n")
    rep = verify(run["out"], input_path=run["input"])
    # one inserted line is one difference, not a cascade of "changed" records
    assert _kinds(rep) == ["input_changed", "record_added"]
    assert "new" in rep.differences[1].message and "line 2" in rep.differences[1].message
    run["input"].write_text("\n".join([INPUT_LINES[0], INPUT_LINES[3]]) + "\n")
    rep = verify(run["out"], input_path=run["input"])
    assert _kinds(rep) == ["input_changed", "record_removed"]
    assert "c2" in rep.differences[1].message


def test_missing_input_file(tmp_path):
    run = make_run(tmp_path)
    rep = verify(run["out"], input_path=tmp_path / "gone.jsonl")
    assert not rep.ok and "gone.jsonl" in rep.differences[0].message


def test_changed_weight_file(tmp_path):
    run = make_run(tmp_path)
    w = run["weights"] / "model.safetensors"
    data = bytearray(w.read_bytes())
    data[100] ^= 1
    w.write_bytes(bytes(data))
    rep = verify(run["out"], model_path=run["weights"])
    [d] = rep.differences
    assert d.kind == "weight_changed" and d.file == "model.safetensors"
    assert "model.safetensors" in d.message


def test_missing_and_extra_weight_files(tmp_path):
    run = make_run(tmp_path)
    (run["weights"] / "config.json").unlink()
    (run["weights"] / "adapter.bin").write_bytes(b"lora")
    rep = verify(run["out"], model_path=run["weights"])
    assert {(d.kind, d.file) for d in rep.differences} == {
        ("weight_missing", "config.json"),
        ("weight_extra", "adapter.bin"),
    }
    rep = verify(run["out"], model_path=tmp_path / "nowhere")
    assert _kinds(rep) == ["weights_missing"] and "nowhere" in rep.differences[0].message


def test_extra_file_and_missing_file(tmp_path):
    run = make_run(tmp_path)
    (run["out"] / "case_report" / "c1.json").unlink()
    (run["out"] / "case_report" / "injected.json").write_text("{}")
    rep = verify(run["out"])
    assert {(d.kind, d.file) for d in rep.differences} == {
        ("missing_file", "case_report/c1.json"),
        ("extra_file", "case_report/injected.json"),
    }
    assert all(d.file in d.message for d in rep.differences)


def test_signed_with_another_key(tmp_path):
    priv, _ = new_keypair(tmp_path / "keys")
    _, other_pub = new_keypair(tmp_path / "other")
    run = make_run(tmp_path, sign_key=priv)
    rep = verify(run["out"], pubkey=other_pub)
    assert not rep.ok and rep.signature == "invalid"
    [d] = rep.differences
    assert d.kind == "signature" and d.file == SIGNATURE_NAME and SIGNATURE_NAME in d.message


def test_flipped_signature_byte(tmp_path):
    priv, pub = new_keypair(tmp_path / "keys")
    run = make_run(tmp_path, sign_key=priv)
    sig_path = run["out"] / SIGNATURE_NAME
    sig = bytearray(base64.b64decode(sig_path.read_bytes()))
    sig[0] ^= 0x01
    sig_path.write_bytes(base64.b64encode(bytes(sig)) + b"\n")
    rep = verify(run["out"], pubkey=pub)
    assert _kinds(rep) == ["signature"] and SIGNATURE_NAME in rep.differences[0].message


def test_edited_manifest_breaks_signature(tmp_path):
    """Editing the manifest to hide a changed file is caught by the signature."""
    priv, pub = new_keypair(tmp_path / "keys")
    run = make_run(tmp_path, sign_key=priv)
    m = run["out"] / MANIFEST_NAME
    m.write_bytes(m.read_bytes().replace(b'"tiny"', b'"big"'))
    rep = verify(run["out"], pubkey=pub)
    assert rep.signature == "invalid" and not rep.ok


def test_missing_signature_when_a_key_is_given(tmp_path):
    _, pub = new_keypair(tmp_path / "keys")
    run = make_run(tmp_path)
    rep = verify(run["out"], pubkey=pub)
    assert rep.signature == "missing" and _kinds(rep) == ["signature"]
    assert verify(run["out"]).signature == "unsigned" and verify(run["out"]).ok


def test_signed_but_not_checked_without_a_key(tmp_path):
    priv, _ = new_keypair(tmp_path / "keys")
    run = make_run(tmp_path, sign_key=priv)
    rep = verify(run["out"])
    assert rep.ok and rep.signature == "not checked"


def test_missing_manifest(tmp_path):
    rep = verify(tmp_path)
    assert _kinds(rep) == ["manifest"] and MANIFEST_NAME in rep.differences[0].message
