"""Ed25519 signatures over manifest.json, with keys kept in local files (no key server).

Formats (chosen so the files can be checked with stock tools such as `openssl pkeyutl`):
- private key: PEM, PKCS#8, unencrypted (``nexagauge.key``, mode 0600, created with O_EXCL so
  an existing key is never overwritten and the file is never world-readable, not even briefly);
- public key: PEM, SubjectPublicKeyInfo (``nexagauge.pub``);
- signature: ``manifest.json.sig`` holds the 64-byte raw Ed25519 signature of the exact bytes of
  manifest.json, base64-encoded on one line (text, so it survives mail and ticket systems).

The same keys and format sign an offline bundle's MANIFEST.json (`name=`): one signing scheme,
so one key pair and one `openssl pkeyutl` recipe serve both.

Why Ed25519: deterministic signatures, small keys, no parameters to choose wrongly.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from nexagauge_local.audit.manifest import MANIFEST_NAME, SIGNATURE_NAME

PRIVATE_NAME = "nexagauge.key"
PUBLIC_NAME = "nexagauge.pub"


class SigningError(Exception):
    """Base class: every problem with keys or signatures."""


class KeyExists(SigningError, FileExistsError):
    pass


class CorruptKey(SigningError):
    pass


class WrongKeyType(SigningError):
    pass


class SignatureMissing(SigningError, FileNotFoundError):
    pass


class BadSignature(SigningError):
    pass


def _write_new(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)  # the umask may have narrowed it; never widened
        os.write(fd, data)
    finally:
        os.close(fd)


def new_keypair(out_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Create out_dir/nexagauge.key (0600) and out_dir/nexagauge.pub; refuse if either exists."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    priv_path, pub_path = d / PRIVATE_NAME, d / PUBLIC_NAME
    for p in (priv_path, pub_path):
        if p.exists():
            raise KeyExists(f"{p}: already exists; refusing to overwrite a key")
    key = Ed25519PrivateKey.generate()
    priv = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    pub = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    try:
        _write_new(priv_path, priv, 0o600)
    except FileExistsError as exc:  # lost a race with another writer
        raise KeyExists(f"{priv_path}: already exists; refusing to overwrite a key") from exc
    try:
        _write_new(pub_path, pub, 0o644)
    except FileExistsError as exc:
        raise KeyExists(f"{pub_path}: already exists; refusing to overwrite a key") from exc
    return priv_path, pub_path


def load_private_key(path: str | os.PathLike[str]) -> Ed25519PrivateKey:
    p = Path(path)
    data = p.read_bytes()
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise CorruptKey(f"{p}: not a readable unencrypted PEM private key ({exc})") from exc
    except Exception as exc:  # cryptography raises UnsupportedAlgorithm for odd key kinds
        raise WrongKeyType(f"{p}: unsupported private key ({exc})") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise WrongKeyType(f"{p}: a {type(key).__name__}, expected an Ed25519 private key")
    return key


def load_public_key(path: str | os.PathLike[str]) -> Ed25519PublicKey:
    p = Path(path)
    data = p.read_bytes()
    if b"PRIVATE KEY" in data:
        raise WrongKeyType(f"{p}: this is a private key; give the public key (.pub)")
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError as exc:
        raise CorruptKey(f"{p}: not a readable PEM public key ({exc})") from exc
    except Exception as exc:
        raise WrongKeyType(f"{p}: unsupported public key ({exc})") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise WrongKeyType(f"{p}: a {type(key).__name__}, expected an Ed25519 public key")
    return key


def key_fingerprint(key: Ed25519PublicKey | Ed25519PrivateKey) -> str:
    """sha256 of the raw 32-byte public key, hex: a short name for a key in reports."""
    pub = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    raw = pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def sign_bytes(data: bytes, key_path: str | os.PathLike[str]) -> bytes:
    return load_private_key(key_path).sign(data)


def sign_manifest(
    outdir: str | os.PathLike[str], key_path: str | os.PathLike[str], *, name: str = MANIFEST_NAME
) -> Path:
    """Write outdir/NAME.sig (base64 raw Ed25519 signature of NAME's bytes; NAME defaults to a
    run's manifest.json).

    An existing signature is replaced: re-signing is how a run is signed after the fact
    (`sign OUTDIR --key`), and the old signature would no longer match a new manifest anyway.
    """
    d = Path(outdir)
    manifest = d / name
    if not manifest.is_file():
        raise FileNotFoundError(f"{manifest}: no manifest to sign")
    sig = sign_bytes(manifest.read_bytes(), key_path)
    out = d / signature_name(name)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_bytes(base64.b64encode(sig) + b"\n")
    os.replace(tmp, out)
    return out


def signature_name(name: str) -> str:
    """The signature file beside manifest NAME: NAME.sig."""
    return SIGNATURE_NAME if name == MANIFEST_NAME else f"{name}.sig"


def read_signature(
    outdir: str | os.PathLike[str], *, name: str = MANIFEST_NAME,
    how: str = "sign OUTDIR --key KEYFILE",
) -> bytes:
    """The signature beside manifest NAME; SignatureMissing says to sign with HOW."""
    p = Path(outdir) / signature_name(name)
    try:
        text = p.read_bytes().strip()
    except FileNotFoundError as exc:
        raise SignatureMissing(f"{p}: no signature (sign with `{how}`)") from exc
    try:
        sig = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadSignature(f"{p}: not base64") from exc
    if len(sig) != 64:
        raise BadSignature(f"{p}: {len(sig)} bytes, an Ed25519 signature is 64")
    return sig


def verify_manifest_signature(
    outdir: str | os.PathLike[str], pubkey_path: str | os.PathLike[str], *,
    name: str = MANIFEST_NAME, how: str = "sign OUTDIR --key KEYFILE",
) -> str:
    """Check NAME.sig against NAME (a run's manifest.json by default); return the key
    fingerprint when valid.

    Raises SignatureMissing (its message says to sign with HOW), BadSignature, CorruptKey or
    WrongKeyType.
    """
    d = Path(outdir)
    key = load_public_key(pubkey_path)
    sig = read_signature(d, name=name, how=how)
    manifest = d / name
    try:
        data = manifest.read_bytes()
    except FileNotFoundError as exc:
        raise BadSignature(f"{manifest}: missing, nothing the signature could cover") from exc
    try:
        key.verify(sig, data)
    except InvalidSignature as exc:
        raise BadSignature(
            f"{d / signature_name(name)}: does not match {name} under key {key_fingerprint(key)[:16]}"
            " (manifest edited, or signed with another key)"
        ) from exc
    return key_fingerprint(key)
