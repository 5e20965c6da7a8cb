"""MANIFEST.json.sig: a bundle's manifest signed with the audit trail's Ed25519 keys.

Why the audit's signing code and not a bundle's own: one key pair (`keys new`), one file
format and one `openssl pkeyutl` recipe for runs and bundles alike. The manifest lists every
file's sha256 (install.sh included) and `verify` refuses files it does not list, so a valid
signature vouches for the whole folder.
"""

from __future__ import annotations

from pathlib import Path

from nexagauge_local.audit.signing import verify_manifest_signature
from nexagauge_local.bundle.joiner import MANIFEST_NAME

SIGN_HOW = "bundle build --sign KEYFILE"


def check_signature(root: Path, pubkey: Path) -> str:
    """The signing key's fingerprint when ROOT/MANIFEST.json.sig is valid under PUBKEY.

    Raises audit.signing's SigningError subclasses (missing, bad signature, bad key), each
    with a message naming the file.
    """
    return verify_manifest_signature(root, pubkey, name=MANIFEST_NAME, how=SIGN_HOW)
