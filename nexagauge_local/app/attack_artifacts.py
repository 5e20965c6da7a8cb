"""The `export --format jailbreakbench|harmbench` service: a run's attacks as JailbreakBench
artifacts (one per strategy) or one HarmBench completions file.

Why the run's input is read again: a case report keeps what the judge said, not the attack
block (its turns, queries, usage), and the case report's format stays as it is for every
other record. The attack records are the input file summary.json names (or `records`, for a
run copied elsewhere), joined to the case reports by case_id; when the run left a
manifest.json, the file must be the one it hashed, so an export never pairs a judgement with
another run's attack.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nexagauge_local.app.errors import ExportError, RunDirError
from nexagauge_local.audit.inputs import same_input
from nexagauge_local.audit.manifest import MANIFEST_NAME, ManifestError, read_manifest
from nexagauge_local.readers import DatasetError, iter_raw
from nexagauge_local.redact import redact_text, redact_url
from nexagauge_local.redteam.attacks.record import ATTACK
from nexagauge_local.report import rundata
from nexagauge_local.report.attack_exports import (
    JudgedAttack,
    RunFacts,
    artifact_file_names,
    harmbench_completions,
    jailbreakbench_artifacts,
    judged_attack,
)
from nexagauge_local.report.run_summary import RunSummary

ATTACK_FORMATS: tuple[str, ...] = ("jailbreakbench", "harmbench")
DEFAULT_NAMES = {"jailbreakbench": "jailbreakbench", "harmbench": "harmbench_completions.json"}


@dataclass(frozen=True)
class AttacksExported:
    """Where the export went: a folder of artifacts or one file, and how many entries."""

    path: Path
    files: int
    entries: int


def export_facts(summary: RunSummary) -> RunFacts:
    """The run's date and its red-team judge, with any credential of its URL masked."""
    judge = summary.node_judges.get("redteam") or summary.judge
    described: dict[str, Any] = {}
    if judge is not None:
        described = {k: v for k, v in (("profile", judge.profile), ("model", judge.model),
                                       ("fingerprint", judge.fingerprint), ("demo", judge.demo))
                     if v is not None}
        if judge.endpoint is not None:
            described["url"] = redact_url(judge.endpoint.url)
            described["served_model"] = judge.endpoint.served_model
    date = summary.started[:10] if summary.started else None
    return RunFacts(evaluation_date=date, judge=described)


def _records_path(out_dir: Path, summary: RunSummary, records: Path | None) -> Path:
    path = records or (Path(summary.input) if summary.input else None)
    if path is None or not path.is_file():
        named = f" ({redact_text(str(path))})" if path is not None else ""
        raise ExportError(f"{out_dir}: the run's attack records{named} cannot be read; pass "
                          "the file the run read with --input")
    if (out_dir / MANIFEST_NAME).is_file():
        try:
            facts = read_manifest(out_dir).input
        except ManifestError as exc:
            raise ExportError(str(exc)) from None
        if facts is not None and facts.origin != "memory" and same_input(path, facts) is None:
            raise ExportError(f"{path}: not the input this run read (its manifest.json holds "
                              "another file's hash); pass the run's own input with --input")
    return path


def _attack_records(path: Path) -> dict[str, dict[str, Any]]:
    """case_id -> raw record, for the records that carry an attack block."""
    out: dict[str, dict[str, Any]] = {}
    try:
        for raw in iter_raw(path):
            data = raw.data
            if data is not None and data.get(ATTACK) is not None and data.get("case_id"):
                out.setdefault(str(data["case_id"]), data)
    except DatasetError as exc:
        raise ExportError(str(exc)) from None
    return out


def judged_attacks(out_dir: Path, records: Path | None = None
                   ) -> tuple[list[JudgedAttack], RunFacts]:
    """Every attack the run judged, in the input's order, and the run's facts."""
    try:
        run = rundata.load_run(out_dir)
        red = run.metrics_of("redteam")
        if not red or not red.get("attack_outcomes"):
            raise ExportError(f"{out_dir}: the run judged no attack records (metrics/"
                              "redteam.json has no attack_outcomes); nothing to export")
        raws = _attack_records(_records_path(out_dir, run.summary, records))
        order = {case_id: i for i, case_id in enumerate(raws)}
        found = [a for case in run.iter_cases()
                 if (raw := raws.get(case.report.case_id)) is not None
                 and (a := judged_attack(case.report, raw)) is not None]
    except rundata.RunDirError as exc:
        raise RunDirError(str(exc)) from None
    if not found:
        raise ExportError(f"{out_dir}: no case report matches an attack record of the run's "
                          "input; nothing to export")
    found.sort(key=lambda a: order[a.case_id])
    return found, export_facts(run.summary)


def _write_json(path: Path, doc: Any) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise ExportError(f"{path}: cannot write: {exc.strerror}") from None


def export_attacks(out_dir: Path, fmt: str, output: Path | None = None,
                   records: Path | None = None) -> AttacksExported:
    """Write the run's attacks as `fmt`: jailbreakbench, a folder with one <strategy>.json
    artifact each (default OUTDIR/jailbreakbench/); harmbench, one completions file (default
    OUTDIR/harmbench_completions.json)."""
    if fmt not in ATTACK_FORMATS:
        raise ExportError(f"unknown attack export format {fmt!r}; one of {', '.join(ATTACK_FORMATS)}")
    attacks, facts = judged_attacks(out_dir, records)
    target = output or out_dir / DEFAULT_NAMES[fmt]
    if fmt == "harmbench":
        doc = harmbench_completions(attacks)
        _write_json(target, doc)
        return AttacksExported(target, 1, sum(len(v) for v in doc.values()))
    if target.exists() and not target.is_dir():
        raise ExportError(f"{target}: a file; jailbreakbench writes a folder, one artifact per "
                          "strategy")
    artifacts = jailbreakbench_artifacts(attacks, facts)
    names = artifact_file_names(artifacts)
    for strategy, artifact in artifacts.items():
        _write_json(target / names[strategy], artifact)
    return AttacksExported(target, len(artifacts),
                           sum(len(a["jailbreaks"]) for a in artifacts.values()))
