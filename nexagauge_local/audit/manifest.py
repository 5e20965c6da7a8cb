"""The run manifest (manifest.json): what was evaluated, by which judge, with which prompts.

Why a separate file from summary.json: summary.json is for people reading a run; manifest.json
is evidence. It holds hashes of everything a run read and wrote, it is written last (after
every other output exists), and it is the exact byte string a signature covers. Its byte form
is stable (sorted keys, two-space indent, UTF-8, trailing newline), so re-writing an unchanged
manifest gives identical bytes. Its two per-record lists (input records, output files) live in
sidecar files it hashes (see sidecar.py), so its size and the memory to build it stay bounded.

The builder takes facts as plain arguments; it does not import the runner, the judge or the
CLI, so it can be fed from anywhere (and tested without a model).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from nexagauge_local.audit.hashing import (
    WeightFile,
    combined_digest,
    sha256_file,
    sha256_json,
    sha256_text,
)
from nexagauge_local.audit.host import HostFacts
from nexagauge_local.audit.inputs import InputFacts, RecordDigest
from nexagauge_local.audit.sidecar import (
    OUTPUTS_NAME,
    RECORDS_NAME,
    SidecarRef,
    read_sidecar,
    sorted_files,
    tmp_name,
    write_sidecar,
)
from nexagauge_local.judge import JudgeDecision
from nexagauge_local.settings import ConfigSource

# /2: input records and outputs moved from inline lists to hashed sidecar files
# /3: the input's origin (file, folder, stream, memory), compression and records_sha256; a /2
#     manifest reads as /3 with those unset (its input was a file, read as stored)
# manifest/4: each judge's devices and the reason its backend was chosen
SCHEMA_VERSION = "nexagauge-local.manifest/4"
READABLE_VERSIONS = frozenset({"nexagauge-local.manifest/2", "nexagauge-local.manifest/3",
                               SCHEMA_VERSION})
MANIFEST_NAME = "manifest.json"
SIGNATURE_NAME = "manifest.json.sig"
# Never listed under outputs: the manifest cannot contain its own hash, the signature is made
# after it, and the sidecars are hashed by the manifest itself (the outputs sidecar is being
# written while the folder is walked: its temporary name is skipped too).
NOT_OUTPUTS = frozenset(
    {MANIFEST_NAME, SIGNATURE_NAME, RECORDS_NAME, OUTPUTS_NAME, tmp_name(OUTPUTS_NAME)}
)


class _Strict(BaseModel):
    # forbid: a field a verifier does not know is a field it would silently not check
    model_config = ConfigDict(extra="forbid")


class JudgeFacts(_Strict):
    """The judge that scored the run; weights are listed file by file."""

    profile: str
    backend: str
    dtype: str
    grammar_engine: str | None = None
    # where it ran (cpu, cuda:N..., server) and why this backend: the run's one decision for
    # this judge (judge/decision.py); absent in manifests written before they were recorded
    devices: list[str] | None = None
    reason: str | None = None
    demo: bool = False
    weights_path: str  # display only; verify takes --model
    weights: list[WeightFile]
    weights_sha256: str  # combined_digest(weights): one identity for the whole folder
    tokenizer_sha256: str | None = None
    chat_template_sha256: str | None = None
    fingerprint: str | None = None  # the backend's own cache fingerprint, for cross-reference
    # the profile's batch_invariant: each answer independent of what shared the engine, so
    # `reproduce` checks full results (free text too), not only scores and verdicts
    batch_invariant: bool = False


class PromptEntry(_Strict):
    node: str
    version: str
    template_sha256: str


class SchemaEntry(_Strict):
    node: str
    schema_id: str
    sha256: str


class OutputFile(_Strict):
    path: str  # relative to the output folder, posix separators
    sha256: str
    size: int


class Manifest(_Strict):
    schema_version: str = SCHEMA_VERSION
    tool_version: str
    started_at: datetime
    ended_at: datetime
    argv: list[str]
    settings: dict[str, Any]
    input: InputFacts | None
    judge: JudgeFacts | None  # the default judge (`--model PROFILE`)
    # LLM nodes judged by another judge than `judge` (`--model NODE=PROFILE`): node -> it
    node_judges: dict[str, JudgeFacts] = Field(default_factory=dict)
    prompts: list[PromptEntry] = Field(default_factory=list)
    schemas: list[SchemaEntry] = Field(default_factory=list)
    packages: dict[str, str] = Field(default_factory=dict)
    host: HostFacts
    outputs: SidecarRef  # OutputFile lines, in path order

    @property
    def run_config(self) -> ConfigSource | None:
        """The run configuration (`--config`) the run read, from its settings: path, sha256 of
        the file's bytes, and the whole text (None for a run without one)."""
        found = self.settings.get("config")
        return None if found is None else ConfigSource.model_validate(found)

    def iter_outputs(self, outdir: str | os.PathLike[str]) -> Iterator[OutputFile]:
        """The output files the manifest lists, in path order (check_sidecar to trust them)."""
        return read_sidecar(outdir, self.outputs, OutputFile)

    def iter_records(self, outdir: str | os.PathLike[str]) -> Iterator[RecordDigest]:
        """The input's records as hashed by the run (none when the run had no input file)."""
        if self.input is None:
            return iter(())
        return read_sidecar(outdir, self.input.records, RecordDigest)


# ------------------------------------------------------------------ fact builders


def prompt_entry(node: str, version: str, template: str) -> PromptEntry:
    """A prompt template by its text (the caller renders nothing: the raw template is hashed)."""
    return PromptEntry(node=node, version=version, template_sha256=sha256_text(template))


def schema_entry(node: str, schema_id: str, json_schema: Mapping[str, Any]) -> SchemaEntry:
    """An output schema by its JSON schema (e.g. ``Model.model_json_schema()``), canonicalised."""
    return SchemaEntry(node=node, schema_id=schema_id, sha256=sha256_json(json_schema))


def judge_facts(
    decision: JudgeDecision,
    *,
    weights_path: str | os.PathLike[str],
    weights: Sequence[WeightFile],
    tokenizer_sha256: str | None = None,
    chat_template_sha256: str | None = None,
) -> JudgeFacts:
    """What the manifest records of a judge: its decision as made, and the hashes of what it
    loaded, with the combined weights digest filled in (see hashing.hash_weights)."""
    return JudgeFacts(
        **decision.model_dump(include=_DECIDED),
        grammar_engine=decision.grammar_engine,
        devices=decision.devices,
        weights_path=str(weights_path),
        weights=list(weights),
        weights_sha256=combined_digest(weights),
        tokenizer_sha256=tokenizer_sha256,
        chat_template_sha256=chat_template_sha256,
    )


# What JudgeFacts takes from the judge's decision under the decision's own names.
_DECIDED = {"profile", "backend", "dtype", "reason", "demo", "fingerprint", "batch_invariant"}


def hash_outputs(folder: str | os.PathLike[str]) -> Iterator[OutputFile]:
    """Every file under the output folder except the manifest and its sidecars, in path order.

    A stream, not a list: a million case reports are hashed one at a time. Symlinks are
    followed (their target's content is what a reader sees).
    """
    # str paths, not Path: pathlib interns every name it parses, which kept each case report's
    # name alive on a large run.
    root = os.fspath(folder)
    for rel in sorted_files(root, skip=NOT_OUTPUTS.__contains__):
        full = os.path.join(root, rel)
        yield OutputFile(path=rel, sha256=sha256_file(full), size=os.path.getsize(full))


def write_outputs(folder: str | os.PathLike[str], files: Iterable[OutputFile]) -> SidecarRef:
    """The outputs sidecar from OutputFile rows already in path order."""
    return write_sidecar(folder, OUTPUTS_NAME, files)


def _json_safe(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Settings as plain JSON (paths and enums become strings), so the manifest always writes."""
    return json.loads(json.dumps(dict(settings), default=str, sort_keys=True))


def installed_version() -> str:
    """The installed tool's version (package metadata: the package root sits above this layer)."""
    try:
        return metadata.version("nexagauge-local")
    except metadata.PackageNotFoundError:
        return "unknown"


def now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class RunRecord:
    """What a run says of itself in its manifest: when it started, how it was called, with
    which settings, on which input, judged by whom, asking which prompts under which schemas.
    The host, the packages and the outputs are measured when the manifest is built."""

    started_at: datetime
    argv: Sequence[str]
    settings: Mapping[str, Any]
    input: InputFacts | None
    judge: JudgeFacts | None
    node_judges: Mapping[str, JudgeFacts] | None = None
    prompts: Iterable[PromptEntry] = ()
    schemas: Iterable[SchemaEntry] = ()


def build_manifest(
    outdir: str | os.PathLike[str],
    run: RunRecord,
    *,
    host: HostFacts,
    packages: Mapping[str, str] | None = None,
    tool_version: str | None = None,
    ended_at: datetime | None = None,
) -> Manifest:
    """Assemble the manifest; call after every other output file has been written.

    ``outputs`` is computed here by walking ``outdir`` (and its sidecar written there);
    ``ended_at`` defaults to now.
    """
    if tool_version is None:
        tool_version = installed_version()
    return Manifest(
        tool_version=tool_version,
        started_at=run.started_at,
        ended_at=ended_at or now(),
        argv=list(run.argv),
        settings=_json_safe(run.settings),
        input=run.input,
        judge=run.judge,
        node_judges=dict(sorted((run.node_judges or {}).items())),
        prompts=sorted(run.prompts, key=lambda p: (p.node, p.version)),
        schemas=sorted(run.schemas, key=lambda s: (s.node, s.schema_id)),
        packages=dict(packages or {}),
        host=host,
        outputs=write_outputs(outdir, hash_outputs(outdir)),
    )


def manifest_bytes(manifest: Manifest) -> bytes:
    """The canonical byte form: what is written, hashed and signed."""
    data = manifest.model_dump(mode="json")
    return (json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_manifest(outdir: str | os.PathLike[str], manifest: Manifest) -> Path:
    """Write outdir/manifest.json atomically (a reader never sees half a manifest)."""
    path = Path(outdir) / MANIFEST_NAME
    tmp = path.with_name(f".{MANIFEST_NAME}.tmp")
    tmp.write_bytes(manifest_bytes(manifest))
    os.replace(tmp, path)
    return path


class ManifestError(ValueError):
    """manifest.json is missing, not JSON, or not a manifest this version understands."""


def read_manifest(outdir: str | os.PathLike[str]) -> Manifest:
    path = Path(outdir) / MANIFEST_NAME
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise ManifestError(
            f"{path}: no manifest (was the run made with an audit-aware version?)"
        ) from exc
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ManifestError(f"{path}: not valid JSON ({exc})") from exc
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version == "nexagauge-local.manifest/1":
        raise ManifestError(
            f"{path}: schema_version {version!r} is an earlier layout (per-record lists inside "
            f"manifest.json); this version reads {SCHEMA_VERSION!r}: verify it with the version "
            f"that wrote it (its tool_version)"
        )
    if version not in READABLE_VERSIONS:
        raise ManifestError(f"{path}: schema_version {version!r}, expected {SCHEMA_VERSION!r}")
    try:
        return Manifest.model_validate(data)
    except ValueError as exc:
        raise ManifestError(f"{path}: not a valid manifest: {exc}") from exc
