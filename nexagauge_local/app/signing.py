"""The audit trail's services: new signing keys, signing a run, verifying one.

Why a service: each turns the audit package's failures (a key that exists or does not load,
no manifest, a --model that names no weights) into AuditSetupError, so the CLI maps them to
one message and exit 2; a verify that finds differences is a report, not an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nexagauge_local.app.errors import AuditSetupError
from nexagauge_local.audit import KeyExists, SigningError, VerifyReport, new_keypair, sign_manifest
from nexagauge_local.audit import verify as audit_verify
from nexagauge_local.audit.signing import key_fingerprint, load_public_key


@dataclass(frozen=True)
class KeyPair:
    """The files of a new key pair and the public key's fingerprint."""

    private: Path
    public: Path
    fingerprint: str


def new_keys(out_dir: Path) -> KeyPair:
    """Write OUT_DIR/nexagauge.key (0600) and .pub; an existing key is never overwritten."""
    try:
        priv, pub = new_keypair(out_dir)
    except KeyExists as exc:
        raise AuditSetupError(str(exc)) from None
    return KeyPair(priv, pub, key_fingerprint(load_public_key(pub)))


def sign(out_dir: Path, key: Path) -> Path:
    """Sign OUT_DIR/manifest.json with KEY; returns the signature file."""
    try:
        return sign_manifest(out_dir, key)
    except (SigningError, FileNotFoundError) as exc:
        raise AuditSetupError(str(exc)) from None


def weights_path(model: str) -> Path:
    """A --model as given when it exists; a profile name becomes its weights location."""
    path = Path(model).expanduser()
    if path.exists():
        return path
    from nexagauge_local.judge import ProfileNotFound, WeightsMissing, resolve_profile

    try:
        return resolve_profile(model).weights_path()
    except (ProfileNotFound, WeightsMissing) as exc:
        raise AuditSetupError(f"--model {model}: {exc}") from None


def verify(
    out_dir: Path,
    input_path: Path | None = None,
    model: str | None = None,
    pubkey: Path | None = None,
    config: Path | None = None,
    node_models: dict[str, str] | None = None,
) -> VerifyReport:
    """Check OUT_DIR against its manifest (and the input, the judge weights, the signature,
    the run configuration file when given); every difference is in the report, `report.ok`
    says whether there was none."""
    return audit_verify(out_dir, input_path, weights_path(model) if model else None, pubkey,
                        config, {node: weights_path(m) for node, m in (node_models or {}).items()})
