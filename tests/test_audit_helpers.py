"""Builders shared by the audit tests: a fake output folder, input file and weights folder.

Named test_audit_* so it sits with the audit tests; it defines no tests itself.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from nexagauge_local.audit import (
    HostFacts,
    RunRecord,
    finalize_run,
    hash_input,
    hash_tokenizer,
    hash_weights,
    judge_facts,
    prompt_entry,
    schema_entry,
    tokenizer_files_in,
)
from nexagauge_local.judge.decision import JudgeDecision

HOST = HostFacts(os="TestOS", python="3.x", cpu_model="test cpu", cpu_count=2, gpus=[])


def case_report(case_id: str, score: float = 1.0, verdict: str = "yes") -> dict:
    passed = score >= 0.6
    return {
        "target_node": "eval",
        "input": {
            "case_id": case_id,
            "output": "o",
            "input": "i",
            "context": "c",
            "reference": None,
        },
        "grounding": {
            "metrics": [
                {
                    "name": "faithfulness",
                    "category": "grounding",
                    "score": score,
                    "result": [
                        {
                            "verdict": verdict,
                            "passed": passed,
                            "violations": [],
                            "evidence_spans": [],
                        }
                    ],
                    "error": None,
                }
            ],
            "cost": {"cost": 0.0, "input_tokens": 10, "output_tokens": 2, "gpu_seconds": 0.5},
        },
        "eval": {
            "passed": passed,
            "score": score,
            "nodes": ["grounding"],
            "failed_metrics": [],
            "error_metrics": [],
            "scores": {"grounding.faithfulness": score},
        },
        "skipped": {},
    }


def make_output(folder: Path, cases: dict[str, tuple[float, str]] | None = None) -> Path:
    cases = cases or {"c1": (1.0, "yes"), "c2": (0.0, "no"), "case-3": (1.0, "yes")}
    (folder / "case_report").mkdir(parents=True, exist_ok=True)
    (folder / "metrics").mkdir(exist_ok=True)
    for cid, (score, verdict) in cases.items():
        (folder / "case_report" / f"{cid}.json").write_text(
            json.dumps(case_report(cid, score, verdict), indent=2)
        )
    (folder / "metrics" / "grounding.json").write_text(json.dumps({"eligible": len(cases)}))
    (folder / "summary.json").write_text(json.dumps({"cases": len(cases)}))
    (folder / "report.html").write_text("<html><body>report</body></html>")
    return folder


INPUT_LINES = [
    json.dumps({"case_id": "c1", "output": "Paris is in France.", "context": "Paris, France."}),
    json.dumps({"id": "c2", "output": "The moon is cheese.", "context": "The moon is rock."}),
    "",  # a blank line: skipped, but line numbers keep counting
    json.dumps({"output": "No id here.", "context": "x"}),
]


def make_input(path: Path) -> Path:
    path.write_text("\n".join(INPUT_LINES) + "\n", encoding="utf-8")
    return path


def make_weights(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 8}))
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * 64)
    (folder / "tokenizer.json").write_text(json.dumps({"model": {"type": "BPE"}}))
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ messages }}"}))
    return folder


def tiny_decision() -> JudgeDecision:
    """A demo judge's decision: the tiny profile on the hf engine, on CPU."""
    return JudgeDecision(profile="tiny", backend="hf", grammar="outlines", dtype="float32",
                         device="cpu", reason="test", fingerprint="tiny-fp", demo=True)


def make_run(tmp_path: Path, sign_key: Path | None = None) -> dict[str, Path]:
    """A complete fake run: input, weights, output folder with manifest (signed if a key)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    inp = make_input(tmp_path / "data.jsonl")
    weights = make_weights(tmp_path / "judge")
    out = make_output(tmp_path / "out")
    tok, tmpl = hash_tokenizer(tokenizer_files_in(weights), "{{ messages }}")
    judge = judge_facts(tiny_decision(), weights_path=weights, weights=hash_weights(weights),
                        tokenizer_sha256=tok, chat_template_sha256=tmpl)
    run = RunRecord(
        started_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        argv=["nexagauge-local", "run", str(inp), "--target", "grounding"],
        settings={"target": "grounding", "output_dir": out, "judge": "tiny", "seed": 0},
        input=hash_input(inp, into=out, case_ids={4: "case-3"}),
        judge=judge,
        prompts=[prompt_entry("grounding", "grounding/v1", "Is the claim supported? {claim}")],
        schemas=[schema_entry("grounding", "GroundingVerdicts", {"type": "object"})],
    )
    finalize_run(out, run, host=HOST, packages={"nexagauge-local": "0.1.0"}, sign_key=sign_key)
    return {"input": inp, "weights": weights, "out": out}
