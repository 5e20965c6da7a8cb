"""Re-hash an output folder (and optionally its input and judge weights) against manifest.json.

Why list every difference rather than stop at the first: an auditor explaining a mismatch to
someone else needs the whole picture (one edited case report, or the whole folder replaced?).
Every Difference names the file it is about. Weights and input are hashed afresh, never from
the hash memo: a verifier must not trust the host's size/mtime bookkeeping.
"""

from __future__ import annotations

import difflib
import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from nexagauge_local.audit.hashing import hash_weights
from nexagauge_local.audit.inputs import (
    InputFacts,
    RecordDigest,
    hash_records,
    input_identity,
    readable_input,
    records_digest,
)
from nexagauge_local.audit.manifest import (
    MANIFEST_NAME,
    SIGNATURE_NAME,
    Manifest,
    ManifestError,
    hash_outputs,
    read_manifest,
)
from nexagauge_local.audit.sidecar import SidecarError, check_sidecar
from nexagauge_local.audit.signing import SignatureMissing, SigningError, verify_manifest_signature
from nexagauge_local.readers import RecordsError

Kind = Literal[
    "manifest",
    "missing_file",
    "extra_file",
    "changed_file",
    "input_changed",
    "record_changed",
    "record_added",
    "record_removed",
    "weights_missing",
    "weight_changed",
    "weight_missing",
    "weight_extra",
    "signature",
    "config_changed",
]

SignatureStatus = Literal["valid", "invalid", "missing", "not checked", "unsigned"]


class Difference(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Kind
    file: str  # the file the difference is about (relative to OUTDIR for outputs)
    message: str  # one line, starts with the file name
    expected: str | None = None
    actual: str | None = None


class VerifyReport(BaseModel):
    outdir: str
    differences: list[Difference]
    checked: list[str]  # what was compared: outputs, input, weights, signature
    signature: SignatureStatus
    key_fingerprint: str | None = None

    @property
    def ok(self) -> bool:
        return not self.differences

    def lines(self) -> list[str]:
        """Human-readable lines for the CLI (the last one is the verdict)."""
        out = [f"DIFF {d.message}" for d in self.differences]
        sig = self.signature + (
            f" (key {self.key_fingerprint[:16]})" if self.key_fingerprint else ""
        )
        out.append(f"checked: {', '.join(self.checked) or 'nothing'}; signature: {sig}")
        out.append(
            "OK: everything matches the manifest"
            if self.ok
            else f"FAILED: {len(self.differences)} difference(s)"
        )
        return out


def _short(h: str | None) -> str:
    return (h or "-")[:16]


def _changed(kind: Kind, file: str, what: str, expected: str, actual: str) -> Difference:
    return Difference(
        kind=kind,
        file=file,
        message=f"{what}: changed (expected sha256 {_short(expected)}, actual {_short(actual)})",
        expected=expected,
        actual=actual,
    )


def diff_hashes(
    expected: dict[str, str],
    actual: dict[str, str],
    *,
    missing: tuple[Kind, str],
    extra: tuple[Kind, str],
    changed: tuple[Kind, str],
) -> list[Difference]:
    """Every file missing, extra or changed between two {name: sha256} maps, in name order.

    One walk serves the output folder and the weights; each caller names its kinds and message
    templates (`{f}` is the file name).
    """
    return list(diff_sorted(sorted(expected.items()), sorted(actual.items()),
                            missing=missing, extra=extra, changed=changed))


def diff_sorted(
    expected: Iterable[tuple[str, str]],
    actual: Iterable[tuple[str, str]],
    *,
    missing: tuple[Kind, str],
    extra: tuple[Kind, str],
    changed: tuple[Kind, str],
) -> Iterator[Difference]:
    """diff_hashes over two (name, sha256) streams already in name order, walked side by side
    (a million case reports are compared without either list in memory)."""
    exp, act = iter(expected), iter(actual)
    e, a = next(exp, None), next(act, None)
    while e is not None or a is not None:
        if a is None or (e is not None and e[0] < a[0]):
            assert e is not None
            yield Difference(kind=missing[0], file=e[0], expected=e[1],
                             message=missing[1].replace("{f}", e[0]))
            e = next(exp, None)
        elif e is None or a[0] < e[0]:
            yield Difference(kind=extra[0], file=a[0], actual=a[1],
                             message=extra[1].replace("{f}", a[0]))
            a = next(act, None)
        else:
            if e[1] != a[1]:
                yield _changed(changed[0], e[0], changed[1].replace("{f}", e[0]), e[1], a[1])
            e, a = next(exp, None), next(act, None)


def _manifest_diff(exc: SidecarError) -> Difference:
    return Difference(kind="manifest", file=exc.file, message=str(exc))


def compare_outputs(outdir: Path, manifest: Manifest) -> list[Difference]:
    """The folder against the manifest's outputs list (its sidecar checked first: a list edited
    to match an edited file is a difference of its own)."""
    diffs: list[Difference] = []
    try:
        check_sidecar(outdir, manifest.outputs)
    except SidecarError as exc:
        diffs.append(_manifest_diff(exc))
        if not (outdir / manifest.outputs.path).is_file():
            return diffs
    try:
        diffs += diff_sorted(
            ((o.path, o.sha256) for o in manifest.iter_outputs(outdir)),
            ((o.path, o.sha256) for o in hash_outputs(outdir)),
            missing=("missing_file", "{f}: missing (listed in the manifest)"),
            extra=("extra_file", "{f}: extra file, not in the manifest"),
            changed=("changed_file", "{f}"),
        )
    except SidecarError as exc:
        diffs.append(_manifest_diff(exc))
    return diffs


def _where(name: str, r: RecordDigest) -> str:
    pos = f"line {r.line}" if r.line is not None else f"[{r.index}]"
    return f"{name}: record {r.case_id or '(no case_id)'} at {pos}"


def compare_records(
    name: str, expected: list[RecordDigest], actual: list[RecordDigest]
) -> list[Difference]:
    """Record-level differences, aligned on content so one inserted line is one difference."""
    matcher = difflib.SequenceMatcher(
        None, [r.sha256 for r in expected], [r.sha256 for r in actual], autojunk=False
    )
    diffs: list[Difference] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        old, new = expected[i1:i2], actual[j1:j2]
        paired = min(len(old), len(new)) if op == "replace" else 0
        for e, a in zip(old[:paired], new[:paired]):
            where = _where(name, e.model_copy(update={"case_id": e.case_id or a.case_id}))
            diffs.append(_changed("record_changed", name, where, e.sha256, a.sha256))
        diffs += _unpaired(name, old[paired:], "record_removed", "removed")
        diffs += _unpaired(name, new[paired:], "record_added", "added (not in the manifest)")
    return diffs


def _unpaired(
    name: str, records: list[RecordDigest], kind: Kind, what: str
) -> Iterator[Difference]:
    """A difference per record only one side has: removed ones carry the manifest's hash
    (expected), added ones the file's (actual)."""
    removed = kind == "record_removed"
    for r in records:
        yield Difference(kind=kind, file=name, message=f"{_where(name, r)}: {what}",
                         expected=r.sha256 if removed else None,
                         actual=None if removed else r.sha256)


def _unchecked(why: str, label: str) -> list[Difference]:
    """The manifest holds nothing to check `label` (an --input, a --model) against."""
    return [Difference(kind="manifest", file=MANIFEST_NAME,
                       message=f"{MANIFEST_NAME}: {why}, cannot check {label}")]


# verify's `checked` entry when the input's bytes differ from the run's but its records are
# the same ones (a recompressed file, the file behind a pipe, records the run held in memory).
SAME_RECORDS = "input records (same records, other bytes)"


def compare_input(outdir: Path, input_path: Path, manifest: Manifest,
                  checked: list[str] | None = None) -> list[Difference]:
    """The input against the manifest: its bytes first, then its records. A pipe given as
    `input_path` is read once into a private copy. When only the records match, `checked`
    (verify's list) says so: the same records were read from other bytes."""
    name = input_path.name
    if manifest.input is None:
        return _unchecked("records no input file", name)
    if not input_path.exists():
        return [Difference(kind="input_changed", file=name, message=f"{name}: not found")]
    try:
        with readable_input(input_path) as path:
            diffs, same_records = _compare_input(outdir, path, name, manifest, manifest.input)
    except RecordsError as exc:  # a folder that holds no dataset, an unreadable file
        return [Difference(kind="input_changed", file=name, message=str(exc))]
    if same_records and checked is not None:
        checked[checked.index("input")] = SAME_RECORDS
    return diffs


def _compare_input(outdir: Path, path: Path, name: str, manifest: Manifest,
                   facts: InputFacts) -> tuple[list[Difference], bool]:
    """(differences, whether only the records matched)."""
    actual = None
    if facts.origin != "memory":  # records held in memory have no bytes a file could share
        actual = input_identity(path)[1]
        if actual == facts.sha256:
            return [], False
    try:  # which records changed: only a changed input pays for aligning the two lists
        records = hash_records(path, facts.format)  # "records" (in memory): by content
    except (ValueError, OSError, RecordsError) as exc:
        what = f"{name}: cannot be read as records ({exc})"
        return [Difference(kind="input_changed", file=name, message=what)], False
    if facts.records_sha256 is not None and records_digest(records) == facts.records_sha256:
        return [], True
    if actual is None:
        diffs = [Difference(kind="input_changed", file=name, expected=facts.records_sha256,
                            message=f"{name}: not the records the run held in memory "
                                    f"({facts.path})")]
    else:
        diffs = [_changed("input_changed", name, name, facts.sha256, actual)]
    try:
        check_sidecar(outdir, facts.records)
        expected = list(manifest.iter_records(outdir))
    except SidecarError as exc:
        return [*diffs, _manifest_diff(exc)], False
    return diffs + compare_records(name, expected, records), False


def compare_weights(model_path: Path, manifest: Manifest, node: str | None = None) -> list[Difference]:
    """The weights at `model_path` against the default judge's (node None) or the judge that
    judged `node` (`--model NODE=PROFILE` runs), file by file."""
    label = model_path.name
    judge = manifest.judge if node is None else manifest.node_judges.get(node)
    if judge is None:
        return _unchecked("no judge ran in this run" if node is None else
                          f"records no judge of its own for node {node}", label)
    try:
        actual = {w.file: w for w in hash_weights(model_path)}
    except FileNotFoundError:
        return [
            Difference(kind="weights_missing", file=label, message=f"{label}: weights not found")
        ]
    return diff_hashes(
        {w.file: w.sha256 for w in judge.weights},
        {f: w.sha256 for f, w in actual.items()},
        missing=("weight_missing", "{f}: weight file missing from " + label),
        extra=("weight_extra", "{f}: weight file in " + label + " not in the manifest"),
        changed=("weight_changed", "{f} (weights)"),
    )


def compare_config(manifest: Manifest, config_path: Path | None) -> list[Difference]:
    """The run configuration the manifest records: its text must hash to its recorded sha256
    (always checked), and a file given with `config_path` must be that file, byte for byte."""
    try:
        recorded = manifest.run_config
    except ValidationError as exc:
        return [Difference(kind="manifest", file=MANIFEST_NAME,
                           message=f"{MANIFEST_NAME}: settings.config is malformed ({exc})")]
    diffs: list[Difference] = []
    if recorded is not None:
        kept = hashlib.sha256(recorded.text.encode("utf-8")).hexdigest()
        if kept != recorded.sha256:
            diffs.append(_changed("manifest", MANIFEST_NAME, f"{MANIFEST_NAME}: the run "
                                  "configuration's text", recorded.sha256, kept))
    if config_path is None:
        return diffs
    name = config_path.name
    if recorded is None:
        return diffs + _unchecked("records no run configuration (--config)", name)
    try:
        actual = hashlib.sha256(config_path.read_bytes()).hexdigest()
    except OSError:
        return diffs + [Difference(kind="config_changed", file=name, message=f"{name}: not found")]
    if actual != recorded.sha256:
        diffs.append(_changed("config_changed", name, f"{name} (run configuration)",
                              recorded.sha256, actual))
    return diffs


def verify(
    outdir: str | os.PathLike[str],
    input_path: str | os.PathLike[str] | None = None,
    model_path: str | os.PathLike[str] | None = None,
    pubkey: str | os.PathLike[str] | None = None,
    config_path: str | os.PathLike[str] | None = None,
    node_models: Mapping[str, str | os.PathLike[str]] | None = None,
) -> VerifyReport:
    """Compare everything that can be compared; never raises for a mismatch, only reports it.
    `node_models` (node -> weights) checks the judges that judged single nodes."""
    d = Path(outdir)
    diffs: list[Difference] = []
    checked: list[str] = []
    status: SignatureStatus
    fingerprint = None
    if pubkey is not None:
        checked.append("signature")
        try:
            fingerprint = verify_manifest_signature(d, pubkey)
            status = "valid"
        except SignatureMissing as exc:
            status = "missing"
            diffs.append(Difference(kind="signature", file=SIGNATURE_NAME, message=str(exc)))
        except SigningError as exc:
            status = "invalid"
            diffs.append(Difference(kind="signature", file=SIGNATURE_NAME, message=str(exc)))
    else:
        status = "not checked" if (d / SIGNATURE_NAME).is_file() else "unsigned"
    try:
        manifest = read_manifest(d)
    except ManifestError as exc:  # nothing else can be checked without it
        diffs.append(Difference(kind="manifest", file=MANIFEST_NAME, message=str(exc)))
    else:
        checked.append("outputs")
        diffs += compare_outputs(d, manifest)
        if input_path is not None:
            checked.append("input")
            diffs += compare_input(d, Path(input_path), manifest, checked)
        if model_path is not None:
            checked.append("weights")
            diffs += compare_weights(Path(model_path), manifest)
        for node, path in sorted((node_models or {}).items()):
            checked.append(f"weights ({node})")
            diffs += compare_weights(Path(path), manifest, node)
        if config_path is not None:
            checked.append("config")
        diffs += compare_config(manifest, None if config_path is None else Path(config_path))
    return VerifyReport(
        outdir=str(d),
        differences=diffs,
        checked=checked,
        signature=status,
        key_fingerprint=fingerprint,
    )
