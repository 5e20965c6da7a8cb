"""Data for the HTML report's provenance panel: judge weights, prompt hashes, signature status.

Why a plain data function: the report package renders; this module decides what is true. Two
entry points, because the report is written *before* the manifest (the manifest hashes the
report): at run time the panel is built from the same facts the manifest will hold
(``provenance_panel``); when re-reading a finished folder it is built from manifest.json
(``provenance_for_outdir``), which can also check the signature.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from nexagauge_local.audit.inputs import InputFacts
from nexagauge_local.audit.manifest import (
    SIGNATURE_NAME,
    JudgeFacts,
    Manifest,
    ManifestError,
    PromptEntry,
    SchemaEntry,
    read_manifest,
)
from nexagauge_local.audit.signing import SigningError, verify_manifest_signature

SHORT = 12

SignatureLabel = Literal["signed, valid", "signed, INVALID", "signed, not checked", "unsigned"]


class PanelHash(BaseModel):
    node: str
    id: str  # prompt version or schema id
    sha256: str
    short: str


class PanelJudge(BaseModel):
    """An LLM node judged by another judge than the run's default (`--model NODE=PROFILE`)."""

    node: str
    profile: str
    backend: str
    demo: bool
    weights_sha256: str
    weights_short: str


class ProvenancePanel(BaseModel):
    judge_profile: str | None
    judge_backend: str | None
    judge_dtype: str | None
    grammar_engine: str | None
    demo_judge: bool
    weights_sha256: str | None  # combined digest of every weight file
    weights_short: str | None
    weight_files: int
    tokenizer_sha256: str | None
    chat_template_sha256: str | None
    input_sha256: str | None
    prompts: list[PanelHash]
    schemas: list[PanelHash]
    signature: SignatureLabel
    key_fingerprint: str | None = None  # first 16 hex chars of the signing key's sha256
    note: str = ""
    node_judges: list[PanelJudge] = Field(default_factory=list)


def provenance_panel(
    *,
    judge: JudgeFacts | None,
    prompts: Iterable[PromptEntry] = (),
    schemas: Iterable[SchemaEntry] = (),
    input: InputFacts | None = None,
    signature: SignatureLabel = "unsigned",
    key_fingerprint: str | None = None,
    note: str = "",
    node_judges: Mapping[str, JudgeFacts] | None = None,
) -> ProvenancePanel:
    """The panel from run facts. At run time with ``--sign``, pass ``signature="signed, not
    checked"`` and the signing key's fingerprint: the report cannot check a signature that
    does not exist yet, so it says who will have signed and how to check (verify --pubkey)."""
    return ProvenancePanel(
        judge_profile=judge.profile if judge else None,
        judge_backend=judge.backend if judge else None,
        judge_dtype=judge.dtype if judge else None,
        grammar_engine=judge.grammar_engine if judge else None,
        demo_judge=bool(judge and judge.demo),
        weights_sha256=judge.weights_sha256 if judge else None,
        weights_short=judge.weights_sha256[:SHORT] if judge else None,
        weight_files=len(judge.weights) if judge else 0,
        tokenizer_sha256=judge.tokenizer_sha256 if judge else None,
        chat_template_sha256=judge.chat_template_sha256 if judge else None,
        input_sha256=input.sha256 if input else None,
        prompts=[
            PanelHash(
                node=p.node, id=p.version, sha256=p.template_sha256, short=p.template_sha256[:SHORT]
            )
            for p in prompts
        ],
        schemas=[
            PanelHash(node=s.node, id=s.schema_id, sha256=s.sha256, short=s.sha256[:SHORT])
            for s in schemas
        ],
        signature=signature,
        key_fingerprint=key_fingerprint[:16] if key_fingerprint else None,
        note=note,
        node_judges=[
            PanelJudge(node=node, profile=j.profile, backend=j.backend, demo=j.demo,
                       weights_sha256=j.weights_sha256, weights_short=j.weights_sha256[:SHORT])
            for node, j in sorted((node_judges or {}).items())
        ],
    )


def panel_from_manifest(
    manifest: Manifest,
    signature: SignatureLabel,
    key_fingerprint: str | None = None,
    note: str = "",
) -> ProvenancePanel:
    return provenance_panel(
        judge=manifest.judge,
        prompts=manifest.prompts,
        schemas=manifest.schemas,
        input=manifest.input,
        signature=signature,
        key_fingerprint=key_fingerprint,
        note=note,
        node_judges=manifest.node_judges,
    )


def signature_status(
    outdir: str | os.PathLike[str], pubkey: str | os.PathLike[str] | None = None
) -> tuple[SignatureLabel, str | None, str]:
    """(label, key fingerprint, note) for a finished folder."""
    d = Path(outdir)
    if not (d / SIGNATURE_NAME).is_file():
        return "unsigned", None, ""
    if pubkey is None:
        return "signed, not checked", None, "check with: verify OUTDIR --pubkey PUBFILE"
    try:
        return "signed, valid", verify_manifest_signature(d, pubkey), ""
    except SigningError as exc:
        return "signed, INVALID", None, str(exc)


def provenance_for_outdir(
    outdir: str | os.PathLike[str], pubkey: str | os.PathLike[str] | None = None
) -> ProvenancePanel | None:
    """The panel for a finished output folder; None when it has no (readable) manifest."""
    try:
        manifest = read_manifest(outdir)
    except ManifestError:
        return None
    label, fp, note = signature_status(outdir, pubkey)
    return panel_from_manifest(manifest, label, fp, note)
