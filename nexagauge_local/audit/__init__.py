"""Audit trail for a run: manifest.json (hashes of everything read and written), detached
Ed25519 signatures, verification, reproduction checks and the report's provenance panel.

Nothing here imports the runner, the judge or the CLI; they call in (see the module docstrings):
- end of a run:      ``finalize_run(outdir, ...)`` (facts from ``hash_input``, ``hash_weights``,
                     ``hash_tokenizer``, ``judge_facts``, ``prompt_entry``, ``schema_entry``)
- ``verify``:        ``verify(outdir, input_path, model_path, pubkey).lines()``
- ``keys new``:      ``new_keypair(dir)``;  ``sign``: ``sign_manifest(outdir, key)``
- ``reproduce``:     ``rerun_plan(read_manifest(outdir), new)`` then ``compare_runs(outdir, new)``
- report panel:      ``provenance_panel(...)`` at run time, ``provenance_for_outdir(outdir)`` later
"""

from __future__ import annotations

from nexagauge_local.audit.finalize import finalize_run
from nexagauge_local.audit.hashing import (
    HashMemo,
    WeightFile,
    combined_digest,
    hash_tokenizer,
    hash_weights,
    sha256_file,
    tokenizer_files_in,
)
from nexagauge_local.audit.host import HostFacts, collect_host, package_versions
from nexagauge_local.audit.inputs import InputFacts, RecordDigest, hash_input, hash_rows
from nexagauge_local.audit.manifest import (
    MANIFEST_NAME,
    SIGNATURE_NAME,
    JudgeFacts,
    Manifest,
    ManifestError,
    RunRecord,
    build_manifest,
    hash_outputs,
    judge_facts,
    prompt_entry,
    read_manifest,
    schema_entry,
    write_manifest,
)
from nexagauge_local.audit.provenance import (
    ProvenancePanel,
    provenance_for_outdir,
    provenance_panel,
)
from nexagauge_local.audit.reproduce import ReproReport, compare_runs, rerun_plan
from nexagauge_local.audit.signing import (
    BadSignature,
    CorruptKey,
    KeyExists,
    SignatureMissing,
    SigningError,
    WrongKeyType,
    new_keypair,
    sign_manifest,
    verify_manifest_signature,
)
from nexagauge_local.audit.verify import Difference, VerifyReport, verify

__all__ = [
    "MANIFEST_NAME",
    "SIGNATURE_NAME",
    "BadSignature",
    "CorruptKey",
    "Difference",
    "HashMemo",
    "HostFacts",
    "InputFacts",
    "JudgeFacts",
    "KeyExists",
    "Manifest",
    "ManifestError",
    "ProvenancePanel",
    "RecordDigest",
    "ReproReport",
    "RunRecord",
    "SignatureMissing",
    "SigningError",
    "VerifyReport",
    "WeightFile",
    "WrongKeyType",
    "build_manifest",
    "collect_host",
    "combined_digest",
    "compare_runs",
    "finalize_run",
    "hash_input",
    "hash_outputs",
    "hash_rows",
    "hash_tokenizer",
    "hash_weights",
    "judge_facts",
    "new_keypair",
    "package_versions",
    "prompt_entry",
    "provenance_for_outdir",
    "provenance_panel",
    "read_manifest",
    "rerun_plan",
    "schema_entry",
    "sha256_file",
    "sign_manifest",
    "tokenizer_files_in",
    "verify",
    "verify_manifest_signature",
    "write_manifest",
]
