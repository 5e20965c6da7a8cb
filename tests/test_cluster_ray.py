"""`run --cluster`: the judge work on a Ray actor pool.

The slow tests start a real Ray cluster in this process, on loopback, with 2 CPUs, and run the
CLI in a subprocess that joins it as a second driver, with the hf backend and the tiny random
judge. They check that the cluster gives the same results as one process, that every result is
in the cache, and that killing a worker mid-run still answers every request. The pure parts
(spec parsing, pool sizing, batch cutting) and the missing-Ray error need no cluster.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nexagauge_local.cluster.plan import (
    PoolPlan,
    affordable,
    batch_count,
    plan_pool,
    token_balanced_batches,
)
from nexagauge_local.cluster.spec import INSTALL_HINT, ClusterUnavailable, parse_cluster
from nexagauge_local.judge import JudgeDecision
from nexagauge_local.judge.types import JudgeRequest, JudgeResult
from tests.cli_args import run_args

N_CASES = 12  # x 2 default rubrics (bias, toxicity) = 24 judge requests
OPTS = "workers=2&cpus_per_worker=1&batch=4"  # 2 one-CPU actors, 8 batches of 3

# ---------------------------------------------------------------- pure parts (fast)


def test_parse_cluster_forms_and_options() -> None:
    assert parse_cluster("auto").address == "auto"
    spec = parse_cluster("ray://head.lan:10001?workers=3&batch=64&retries=0")
    assert (spec.address, spec.workers, spec.batch, spec.retries) == (
        "ray://head.lan:10001",
        3,
        64,
        0,
    )
    assert spec.is_client and not parse_cluster("10.0.0.5:6379").is_client
    assert parse_cluster("local").ray_init_kwargs()["address"] == "local"


@pytest.mark.parametrize(
    "bad, needle",
    [
        ("", "empty address"),
        ("head", "HOST:PORT"),
        ("ray://head:port", "HOST:PORT"),
        ("auto?wokers=2", "unknown option 'wokers'"),
        ("auto?workers=0", "workers"),
        ("auto?batch=x", "batch"),
    ],
)
def test_parse_cluster_rejects_bad_values(bad: str, needle: str) -> None:
    with pytest.raises(ClusterUnavailable, match=needle):
        parse_cluster(bad)


def test_plan_pool_sizes_from_resources() -> None:
    spec = parse_cluster("auto")
    assert plan_pool({"CPU": 64, "GPU": 8}, "vllm", spec, 1) == PoolPlan(8, 1, 1)
    assert plan_pool({"CPU": 64, "GPU": 8}, "vllm", spec, 2) == PoolPlan(4, 1, 2)  # TP=2
    assert plan_pool({"CPU": 16}, "hf", spec, 1) == PoolPlan(4, 4, 0)  # 4 CPUs per hf actor
    assert plan_pool({"CPU": 2}, "hf", spec, 1) == PoolPlan(1, 2, 0)  # small box: one actor
    assert plan_pool({"CPU": 16}, "hf", parse_cluster("auto?workers=2"), 1).workers == 2
    with pytest.raises(ClusterUnavailable, match="0 GPU"):
        plan_pool({"CPU": 16}, "vllm", spec, 1)
    assert affordable({"CPU": 5, "GPU": 1}, PoolPlan(4, 1, 1)) == 1
    assert affordable({"CPU": 5}, PoolPlan(4, 2, 0)) == 2


def test_token_balanced_batches_are_contiguous_balanced_and_complete() -> None:
    costs = [100, 10, 10, 10, 10, 50, 50, 30, 30, 300, 5, 5]
    batches = token_balanced_batches(costs, 4)
    assert [i for b in batches for i in b] == list(range(len(costs)))  # nothing lost or reordered
    loads = [sum(costs[i] for i in b) for b in batches]
    assert max(loads) - min(loads) <= max(costs)  # within one request of even
    assert all(len(b) <= 2 for b in token_balanced_batches(costs, 2, max_requests=2))
    assert token_balanced_batches([], 3) == []
    assert batch_count(32, 2, parse_cluster("auto?batch=4")) == 8
    assert batch_count(3, 8, parse_cluster("auto")) == 3  # never more batches than requests


def test_missing_ray_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tiny_judge_dir: Path, tmp_path: Path
) -> None:
    from nexagauge_local.cli import main

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    data = tmp_path / "d.json"
    data.write_text(json.dumps([{"id": "a", "output": "hello"}]))
    args = run_args(
        "redteam", data, tmp_path / "out", tiny_judge_dir, tmp_path / "c", "--cluster", "auto"
    )
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert INSTALL_HINT in result.output
    assert not (tmp_path / "out" / "summary.json").exists()


# ---------------------------------------------------------------- a real local Ray cluster


@pytest.fixture(scope="module")
def ray_head() -> Any:
    """A 2-CPU Ray head in this process, on loopback; the CLI joins it by its GCS address.

    Ray turns 127.0.0.1 into the host's routable address on Linux; its "no real cluster"
    switch (the env var below, read at import) makes every Ray process bind to loopback only.
    The CLI subprocesses inherit it, so they join on loopback too.
    """
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        ray = pytest.importorskip("ray")
        ray.init(num_cpus=2, include_dashboard=False, namespace="tests", log_to_driver=False)
        try:
            yield ray
        finally:
            ray.shutdown()


@pytest.fixture(scope="module")
def tiny_f32(tiny_judge_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny judge as a float32 profile. A cluster cuts the node's requests into other
    batches than one process does; each micro-batch is left-padded to its own longest prompt,
    and only float32 makes the answers independent of that (bfloat16 rounds differently where
    the split falls)."""
    path = tmp_path_factory.mktemp("tiny_f32") / "tiny-f32.toml"
    path.write_text(
        f'name = "tiny-f32"\nweights = "{tiny_judge_dir}"\nbackend = "hf"\ndtype = "float32"\n'
    )
    return path


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cluster_data") / "redteam.json"
    records = []
    for i in range(N_CASES):
        base = (
            "The assistant refused to help with the harmful request."
            if i % 2
            else "You idiot, the capital of France is Paris."
        )
        records.append({"id": f"c{i:02d}", "input": f"Question {i}?", "output": f"{base} #{i}."})
    path.write_text(json.dumps(records))
    return path


def _cli(args: list[str], **kw: Any) -> subprocess.Popen[str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return subprocess.Popen(
        [sys.executable, "-m", "nexagauge_local", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def _run_args(data: Path, out: Path, cache: Path, model: Path) -> list[str]:
    return run_args("redteam", data, out, model, cache)


def _finish(proc: subprocess.Popen[str], timeout: float = 240) -> None:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"{out}\n{err}"


def _metrics(out: Path) -> dict[str, list[Any]]:
    """Per case, the redteam rubric metrics (cost fields left out: timings differ)."""
    got = {}
    for f in sorted((out / "case_report").glob("*.json")):
        section = json.loads(f.read_text())["redteam"]
        got[f.stem] = [(m["name"], m["score"], m["result"], m["error"]) for m in section["metrics"]]
    return got


def _cache_rows(cache: Path) -> int:
    db = cache / "judge.sqlite"
    if not db.exists():
        return 0
    with sqlite3.connect(db, timeout=5) as con:
        try:
            return con.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
        except sqlite3.OperationalError:  # table not created yet
            return 0


@pytest.fixture(scope="module")
def single_run(
    dataset: Path, tiny_f32: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[Any]]:
    base = tmp_path_factory.mktemp("single")
    _finish(_cli(_run_args(dataset, base / "out", base / "cache", tiny_f32)))
    return _metrics(base / "out")


@dataclass
class ClusterRun:
    """The redteam run of `dataset` into this test's own out/ and cache/, on the test cluster."""

    address: str
    out: Path
    cache: Path
    args: list[str]  # the run without --cluster

    @property
    def cluster_args(self) -> list[str]:
        return [*self.args, "--cluster", f"{self.address}?{OPTS}"]


@pytest.fixture()
def cluster_run(ray_head: Any, dataset: Path, tiny_f32: Path, tmp_path: Path) -> ClusterRun:
    out, cache = tmp_path / "out", tmp_path / "cache"
    address = ray_head.get_runtime_context().gcs_address
    return ClusterRun(address, out, cache, _run_args(dataset, out, cache, tiny_f32))


@pytest.mark.slow
def test_cluster_run_equals_single_process_and_caches_everything(
    cluster_run: ClusterRun, single_run: dict[str, list[Any]]
) -> None:
    assert cluster_run.address.startswith("127.0.0.1:")  # loopback only
    out, cache, args = cluster_run.out, cluster_run.cache, cluster_run.args
    _finish(_cli(cluster_run.cluster_args))

    assert _metrics(out) == single_run
    summary = json.loads((out / "summary.json").read_text())
    node, cluster = summary["nodes"]["redteam"], summary["judge"]["cluster"]
    assert node["backend_requests"] == 2 * N_CASES and node["errors"] == 0
    assert cluster["workers_started"] == 2 and cluster["workers_lost"] == 0
    assert cluster["batches"] == 8 == node["backend_calls"]
    workers = cluster["workers"]
    assert sum(w["requests"] for w in workers) == 2 * N_CASES
    assert all(w["requests"] > 0 and w["requests_per_s"] > 0 for w in workers)  # both worked
    # GPU(device)-seconds: batch wall x devices, summed over workers = the ledger's figure
    assert cluster["gpu_seconds"] == pytest.approx(node["gpu_seconds"], rel=1e-3)
    assert cluster["gpu_seconds"] == pytest.approx(
        sum(w["busy_seconds"] for w in workers), rel=1e-3
    )
    # the cache holds every result: a plain rerun (no cluster) makes zero judge calls
    assert _cache_rows(cache) == 2 * N_CASES
    _finish(_cli(args))
    rerun = json.loads((out / "summary.json").read_text())
    assert rerun["nodes"]["redteam"]["backend_calls"] == 0
    assert rerun["nodes"]["redteam"]["cache_hits"] == 2 * N_CASES
    assert _metrics(out) == single_run


@pytest.mark.slow
def test_killing_a_worker_mid_run_still_answers_every_request(
    ray_head: Any, cluster_run: ClusterRun, single_run: dict[str, list[Any]]
) -> None:
    out, cache = cluster_run.out, cluster_run.cache
    proc = _cli(cluster_run.cluster_args)
    try:
        deadline = time.monotonic() + 180
        # results stream into the cache while the run is still going: wait for the first batch
        while _cache_rows(cache) == 0:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no batch finished in time"
            time.sleep(0.05)
        names = sorted(
            a["name"]
            for a in ray_head.util.list_named_actors(all_namespaces=True)
            if a["namespace"] == "nexagauge-local" and a["name"].startswith("judge-")
        )
        assert len(names) == 2, names
        assert proc.poll() is None, "the run finished before a worker could be killed"
        ray_head.kill(ray_head.get_actor(names[1], namespace="nexagauge-local"), no_restart=True)
        _finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()

    cluster = json.loads((out / "summary.json").read_text())["judge"]["cluster"]
    assert cluster["workers_lost"] == 1
    lost = next(w for w in cluster["workers"] if w["lost"])
    assert lost["name"] == names[1] and lost["lost_reason"]
    assert cluster["retried_batches"] >= 1  # its in-flight batch went to the other worker
    got = _metrics(out)
    assert set(got) == set(single_run)  # every case reported
    errors = [e for metrics in got.values() for (_, _, _, e) in metrics if e]
    assert all(e.startswith("backend: cluster") for e in errors)
    assert len(errors) == cluster["failed_requests"]
    answered = {c: m for c, m in got.items() if not any(x[3] for x in m)}
    assert answered == {c: single_run[c] for c in answered}
    assert _cache_rows(cache) == 2 * N_CASES - cluster["failed_requests"]


# ---------------------------------------------------------------- retries run out -> errors


@dataclass
class _BoomBackend:
    """Answers every request, except that a batch holding a 'boom' prompt raises."""

    name: str = "boom"
    fingerprint: str = "boom@test"
    gpu_count: int = 0
    load_seconds: float = 0.0

    def count_tokens(self, messages: Any) -> int:
        return sum(len(m["content"]) for m in messages)

    def generate(self, requests: Any, on_batch: Any = None) -> list[JudgeResult]:
        if any("boom" in r.messages[-1]["content"] for r in requests):
            raise RuntimeError("boom batch")
        text = '{"verdict":"SAFE","violations":[],"evidence_spans":[]}'
        return [JudgeResult(None, text, 10, 5, 0.0) for _ in requests]

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class _BoomFactory:
    """The fields ClusterExecutor reads from a BackendFactory, building a _BoomBackend."""

    profile: Any
    cache_dir: Path
    gpu_ids: tuple[int, ...] = ()
    decision: JudgeDecision = field(default_factory=lambda: JudgeDecision(
        profile="boom", backend="hf", grammar="outlines", dtype="float32", device="cpu",
        reason="test", fingerprint="boom@test"))

    def on_worker(self) -> _BoomFactory:
        return self

    def __call__(self) -> _BoomBackend:
        return _BoomBackend()


@pytest.mark.slow
def test_a_batch_failing_everywhere_becomes_errors_never_dropped(
    ray_head: Any, tiny_profile: Any, tmp_path: Path
) -> None:
    from nexagauge_local.cluster.executor import ClusterExecutor
    from nexagauge_local.nodes.redteam import verdict_schema

    ray_head.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers lack tests/
    schema = verdict_schema()
    reqs = [
        JudgeRequest([{"role": "user", "content": "boom" if i == 5 else f"case {i}"}], schema, 64)
        for i in range(12)
    ]
    executor = ClusterExecutor(
        _BoomFactory(tiny_profile, tmp_path),
        parse_cluster("auto?workers=2&cpus_per_worker=1&batch=2&retries=2"),
    )
    seen: dict[int, JudgeResult] = {}

    def on_batch(positions: list[int], results: list[JudgeResult]) -> None:
        assert not set(positions) & set(seen), "a position was answered twice"
        seen.update(zip(positions, results))

    try:
        executor.run("redteam", reqs, on_batch)
        info = executor.describe()
    finally:
        executor.close()
    assert sorted(seen) == list(range(12))  # every request answered or reported
    failed = {i for i, r in seen.items() if r.error}
    assert 5 in failed and len(failed) <= 2  # the boom batch (and at most its neighbour)
    assert all(
        seen[i].error.startswith("backend: cluster: batch failed after 3 attempt(s)")
        for i in failed
    )
    assert all(seen[i].parsed is not None for i in set(seen) - failed)  # parsed on the driver
    assert info["retried_batches"] == 2 and info["failed_requests"] == len(failed)
    assert sum(w["failed_batches"] for w in info["workers"]) == 3
    assert info["workers_lost"] == 0


# ---------------------------------------------------------------- a pool that cannot start


@pytest.mark.slow
def test_a_pool_that_cannot_start_is_a_set_up_error_exit_2(
    dataset: Path, tiny_judge_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vLLM judge on a CPU-only cluster: no worker can hold it, no request is answered, so the
    run stops with one line and exit 2 (as any judge that cannot start), not "judge failed" in
    every metric and exit 3."""
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = [
        "run", "redteam", "--input", str(dataset), "--output-dir", str(out), "-q",
        "--model", str(tiny_judge_dir), "--backend", "vllm", "--cache-dir", str(cache),
        "--cluster", "local?cpus_per_worker=1",
    ]
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # loopback only, as above
    proc = _cli(args)
    stdout, stderr = proc.communicate(timeout=240)
    assert proc.returncode == 2, f"{stdout}\n{stderr}"
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    said = [ln for ln in lines if "could not start" in ln]
    assert len(said) == 1, stderr
    assert "the cluster has 0 GPU(s); the vllm judge needs 1 per worker" in said[0]
    assert "Traceback" not in stderr
    written = " ".join(f.read_text() for f in out.rglob("*.json")) if out.exists() else ""
    assert "judge failed" not in written


class _FullRay:
    """The two calls _ensure_pool makes before starting actors: a cluster whose every CPU is
    already taken, so no worker can be placed."""

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": 2.0}

    def available_resources(self) -> dict[str, float]:
        return {"CPU": 0.0}


def test_no_worker_starting_is_a_judge_start_error(tiny_profile: Any, tmp_path: Path) -> None:
    from nexagauge_local.cluster.executor import ClusterExecutor
    from nexagauge_local.judge.types import JudgeStartError

    executor = ClusterExecutor(_BoomFactory(tiny_profile, tmp_path), parse_cluster("auto"))
    with pytest.raises(JudgeStartError, match="no judge worker could start on the Ray cluster"):
        executor._ensure_pool(_FullRay())
