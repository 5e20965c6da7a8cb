from __future__ import annotations

from nexagauge_local.audit import (
    new_keypair,
    provenance_for_outdir,
    provenance_panel,
    read_manifest,
)
from nexagauge_local.audit.signing import SIGNATURE_NAME
from tests.test_audit_helpers import make_run


def test_panel_from_a_signed_folder(tmp_path):
    priv, pub = new_keypair(tmp_path / "keys")
    run = make_run(tmp_path, sign_key=priv)
    m = read_manifest(run["out"])
    panel = provenance_for_outdir(run["out"], pubkey=pub)
    assert panel is not None
    assert panel.signature == "signed, valid" and len(panel.key_fingerprint) == 16
    assert panel.weights_sha256 == m.judge.weights_sha256
    assert panel.weights_short == m.judge.weights_sha256[:12]
    assert panel.weight_files == 4 and panel.demo_judge
    assert [(p.node, p.id) for p in panel.prompts] == [("grounding", "grounding/v1")]
    assert panel.prompts[0].short == m.prompts[0].template_sha256[:12]
    assert panel.input_sha256 == m.input.sha256
    assert provenance_for_outdir(run["out"]).signature == "signed, not checked"
    _, other = new_keypair(tmp_path / "other")
    bad = provenance_for_outdir(run["out"], pubkey=other)
    assert bad.signature == "signed, INVALID" and SIGNATURE_NAME in bad.note


def test_panel_unsigned_and_without_manifest(tmp_path):
    run = make_run(tmp_path)
    assert provenance_for_outdir(run["out"]).signature == "unsigned"
    assert provenance_for_outdir(tmp_path / "empty") is None


def test_panel_at_run_time_without_judge():
    panel = provenance_panel(judge=None)
    assert panel.weights_sha256 is None and panel.weight_files == 0
    assert panel.signature == "unsigned" and panel.prompts == []
