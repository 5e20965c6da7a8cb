from __future__ import annotations

import base64
import stat

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from nexagauge_local.audit import (
    SIGNATURE_NAME,
    BadSignature,
    CorruptKey,
    KeyExists,
    SignatureMissing,
    WrongKeyType,
    new_keypair,
    sign_manifest,
    verify_manifest_signature,
)
from nexagauge_local.audit.signing import key_fingerprint, load_private_key
from tests.test_audit_helpers import make_run


def test_new_keypair_mode_and_no_overwrite(tmp_path):
    priv, pub = new_keypair(tmp_path / "keys")
    assert stat.S_IMODE(priv.stat().st_mode) == 0o600
    assert priv.name == "nexagauge.key" and pub.name == "nexagauge.pub"
    assert b"BEGIN PRIVATE KEY" in priv.read_bytes() and b"BEGIN PUBLIC KEY" in pub.read_bytes()
    before = priv.read_bytes()
    with pytest.raises(KeyExists, match="nexagauge.key"):
        new_keypair(tmp_path / "keys")
    assert priv.read_bytes() == before
    # a leftover public key alone also blocks: the pair must stay a pair
    priv.unlink()
    with pytest.raises(KeyExists, match="nexagauge.pub"):
        new_keypair(tmp_path / "keys")
    assert not priv.exists()


def test_sign_and_verify_round_trip(tmp_path):
    priv, pub = new_keypair(tmp_path / "keys")
    run = make_run(tmp_path, sign_key=priv)
    sig = run["out"] / SIGNATURE_NAME
    assert len(base64.b64decode(sig.read_bytes().strip())) == 64
    fp = verify_manifest_signature(run["out"], pub)
    assert fp == key_fingerprint(load_private_key(priv))


def test_signature_errors(tmp_path):
    priv, pub = new_keypair(tmp_path / "keys")
    _other_priv, other_pub = new_keypair(tmp_path / "other")
    run = make_run(tmp_path)
    with pytest.raises(SignatureMissing, match=SIGNATURE_NAME):
        verify_manifest_signature(run["out"], pub)
    sign_manifest(run["out"], priv)
    with pytest.raises(BadSignature, match="another key"):
        verify_manifest_signature(run["out"], other_pub)
    (run["out"] / SIGNATURE_NAME).write_text("@@@ not base64")
    with pytest.raises(BadSignature, match="base64"):
        verify_manifest_signature(run["out"], pub)


def test_key_errors(tmp_path):
    priv, _pub = new_keypair(tmp_path / "keys")
    run = make_run(tmp_path, sign_key=priv)
    with pytest.raises(WrongKeyType, match="private key"):
        verify_manifest_signature(run["out"], priv)  # private key given as --pubkey
    bad = tmp_path / "bad.pub"
    bad.write_text("-----BEGIN PUBLIC KEY-----\ngarbage\n-----END PUBLIC KEY-----\n")
    with pytest.raises(CorruptKey):
        verify_manifest_signature(run["out"], bad)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    ec_priv = tmp_path / "ec.key"
    ec_priv.write_bytes(
        ec_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    ec_pub = tmp_path / "ec.pub"
    ec_pub.write_bytes(
        ec_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    with pytest.raises(WrongKeyType, match="Ed25519"):
        sign_manifest(run["out"], ec_priv)
    with pytest.raises(WrongKeyType, match="Ed25519"):
        verify_manifest_signature(run["out"], ec_pub)
    junk = tmp_path / "junk.key"
    junk.write_text("hello")
    with pytest.raises(CorruptKey):
        sign_manifest(run["out"], junk)
