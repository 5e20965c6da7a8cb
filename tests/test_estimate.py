"""`estimate`: exact prompt tokens without weights, cached requests free, calibrated seconds."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from nexagauge_local.cli import main
from nexagauge_local.estimate.cost import calibration_path
from tests.cli_args import judge_opts, run_args

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "nexagauge_local" / "data" / "sample.jsonl"


def _estimate(target: str, tiny_judge_dir: Path, cache: Path, limit: int = 6) -> dict:
    args = ["estimate", target, "--input", str(SAMPLE), "--limit", str(limit), "--json"]
    res = CliRunner().invoke(main, [*args, *judge_opts(tiny_judge_dir, cache)])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_estimate_matches_the_run_exactly_then_is_free_once_cached(
    tiny_judge_dir: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    before = _estimate("redteam", tiny_judge_dir, cache)
    red = before["nodes"]["redteam"]["judge"]
    assert red["basis"] == "exact requests" and red["cached"] == 0 and red["gpu_seconds"] is None
    assert before["nodes"]["scan"].get("judge") is None

    out = tmp_path / "out"
    args = run_args("redteam", SAMPLE, out, tiny_judge_dir, cache, "--limit", "6")
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    used = json.loads((out / "summary.json").read_text())["nodes"]["redteam"]
    assert red["requests"] == used["requests"]
    assert red["prompt_tokens"] == used["input_tokens"]  # exact: same tokenizer, same template

    after = _estimate("redteam", tiny_judge_dir, cache)["nodes"]["redteam"]["judge"]
    assert after["cached"] == after["unique"] == red["unique"]
    assert after["uncached"] == 0 and after["prompt_tokens"] == 0


def test_calibration_turns_tokens_into_gpu_seconds(tiny_judge_dir: Path, tmp_path: Path) -> None:
    from nexagauge_local.judge.factory import make_backend_factory

    cache = tmp_path / "cache"
    fp = make_backend_factory(str(tiny_judge_dir), backend="hf", cache_dir=cache).decision.fingerprint
    calib = {
        "version": 1,
        "fingerprint": fp,
        "device": "cpu-test",
        "fill_ratio": 0.5,
        "seconds_per_prompt_token": 0.001,
        "seconds_per_output_token": 0.01,
        "schemas": {},
        "measured_at": "2026-11-22T00:00:00",
    }
    path = calibration_path(cache, fp, "cpu-test")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(calib))
    est = _estimate("eval", tiny_judge_dir, cache)["nodes"]
    red = est["redteam"]["judge"]
    expected = red["prompt_tokens"] * 0.001 + red["output_tokens"] * 0.01
    assert abs(red["gpu_seconds"] - expected) < 0.01 * max(1.0, expected)
    assert est["relevance"]["judge"]["basis"].startswith("requests built from stand-in claims")
    assert est["relevance"]["judge"]["requests"] == est["relevance"]["eligible"]
    assert est["claims"]["judge"]["requests"] >= est["claims"]["eligible"]
    assert est["refmatch"].get("judge") is None  # deterministic: no judge, zero GPU-seconds


def test_estimate_table_names_the_missing_calibration(tiny_judge_dir: Path, tmp_path: Path) -> None:
    args = ["estimate", "redteam", "--input", str(SAMPLE), "--limit", "3"]
    res = CliRunner().invoke(main, [*args, *judge_opts(tiny_judge_dir, tmp_path)])
    assert res.exit_code == 0, res.output
    assert "calibrate --model" in res.output and "redteam" in res.output


def test_estimate_unknown_model_is_a_clear_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        main,
        [
            "estimate",
            "redteam",
            "--input",
            str(SAMPLE),
            "--model",
            "no-such-judge",
            "--cache-dir",
            str(tmp_path),
        ],
    )
    assert res.exit_code != 0 and "unknown judge model 'no-such-judge'" in res.output


def test_estimate_warns_about_requests_over_the_context_window(tmp_path: Path) -> None:
    """A 60k-character output cannot fit the demo judge's 8192-token window: estimate says so
    (case, metric, token counts) before any weights load, and the JSON lists it."""
    data = tmp_path / "long.jsonl"
    words = " ".join(f"token{i % 97} and more words" for i in range(3000))
    data.write_text(
        json.dumps({"case_id": "huge", "input": "Summarise.", "output": words, "redteam": {}})
        + "\n"
        + json.dumps({"case_id": "small", "input": "Hi", "output": "Hello.", "redteam": {}})
        + "\n"
    )
    args = ["estimate", "redteam", "--input", str(data), *judge_opts("demo", tmp_path / "cache")]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "warning: redteam: 2 request(s) exceed the judge's context window (demo)" in text
    assert "huge (" in text and "small" not in text.split("warning:")[1]
    as_json = CliRunner().invoke(main, [*args, "--json"])
    over = json.loads(as_json.output)["nodes"]["redteam"]["judge"]["over_context"]
    assert {o["case_id"] for o in over} == {"huge"} and len(over) == 2
    assert all(o["prompt_tokens"] + o["max_tokens"] > 8192 for o in over)
