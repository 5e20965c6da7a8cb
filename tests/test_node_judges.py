"""A judge per LLM node (`--model NODE=PROFILE`, nexa-gauge's `--llm-model NODE=MODEL`).

Runner level, with scripted judges: each node asks its own judge, two nodes on one profile share
one, a judge no later node needs is closed before the next node runs (and, over several shards,
only in the last one), usage and summary.json say which judge judged which node. CLI level:
malformed or unknown NODE=PROFILE items are one line, exit 2, and a judge that cannot load is
refused before any work, naming the node. The real-engine test (the demo judge under a second
profile name, on hf, over two records) is in test_node_judges_demo.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nexagauge_local.cli import main
from nexagauge_local.dataset import Dataset
from nexagauge_local.graph import GRAPH
from nexagauge_local.judge import JudgeRequest, JudgeResult
from nexagauge_local.nodes.base import NodeJudge
from nexagauge_local.runner import Runner, judges_done_after
from nexagauge_local.settings import RunSettings
from tests.scripted_judge import ScriptedJudge

GEVAL = {"metrics": [{"name": "clarity", "criteria": "Is the answer clear?"}]}
ROWS = [
    {"case_id": "a", "output": "Paris is the capital of France.", "geval": GEVAL},
    {"case_id": "b", "output": "Water boils at 100 C at sea level.", "geval": GEVAL},
]
# the nodes these tests run (claims and its branches need the embedder: left out, so skipped)
NODES = ("scan", "redteam", "geval_steps", "geval", "eval")


@dataclass
class LoggedJudge(ScriptedJudge):
    """A scripted judge that writes its requests and its close() into a log shared by all."""

    label: str = ""
    log: list[tuple[str, str]] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        return {"model": self.label, "fingerprint": f"{self.label}@fp", "demo": False}

    def run(self, node: str, requests: Sequence[JudgeRequest],
            progress: Callable[[int], None] | None = None) -> list[JudgeResult]:
        self.log.append((self.label, node))
        return super().run(node, requests, progress)

    def close(self) -> None:
        self.log.append((self.label, "close"))


class Opener:
    """A judge factory that counts the judges it opened (an engine load each)."""

    def __init__(self, label: str, log: list[tuple[str, str]]) -> None:
        self.label, self.log, self.opened = label, log, 0

    def __call__(self) -> LoggedJudge:
        self.opened += 1
        self.log.append((self.label, "open"))
        return LoggedJudge(label=self.label, log=self.log)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def run(tmp_path: Path, node_judges: dict[str, str], shard_size: int = 5000
        ) -> tuple[dict[str, Any], list[tuple[str, str]], dict[str, Opener]]:
    log: list[tuple[str, str]] = []
    openers = {label: Opener(label, log) for label in ("A", *set(node_judges.values()))}
    settings = RunSettings(target="eval", output_dir=tmp_path / "out", cache_dir=tmp_path / "c",
                           progress=False, shard_size=shard_size, model="A",
                           node_models=node_judges)
    factories = GRAPH.factories()
    runner = Runner(settings, registry={n: factories[n] for n in NODES},
                    judge_factory=openers["A"],
                    node_judges={n: NodeJudge(p, openers[p]) for n, p in node_judges.items()})
    outcome = runner.run(Dataset(write_jsonl(tmp_path / "data.jsonl", ROWS)))
    return outcome.summary, log, openers


def test_each_node_asks_its_own_judge_and_an_early_ones_closes_before_later_nodes(
        tmp_path: Path) -> None:
    summary, log, openers = run(tmp_path, {"redteam": "B"})
    # plan order: redteam (B), then geval_steps and geval (A); B closes before A loads
    assert log == [("B", "open"), ("B", "redteam"), ("B", "close"),
                   ("A", "open"), ("A", "geval_steps"), ("A", "geval"), ("A", "close")]
    assert openers["A"].opened == openers["B"].opened == 1
    assert summary["judge"]["model"] == "A" and summary["judge"]["profile"] == "A"
    assert {n: j["profile"] for n, j in summary["node_judges"].items()} == {
        "redteam": "B", "geval_steps": "A", "geval": "A"}
    assert summary["node_judges"]["redteam"]["fingerprint"] == "B@fp"
    assert summary["judge_outcomes"]["redteam"]["requests"] >= 2  # its default rubrics


def test_two_nodes_on_one_profile_share_one_judge(tmp_path: Path) -> None:
    summary, log, openers = run(tmp_path, {"geval_steps": "C", "geval": "C"})
    assert openers["C"].opened == 1 and ("C", "geval_steps") in log and ("C", "geval") in log
    assert [e for e in log if e[0] == "A"] == [("A", "open"), ("A", "redteam"), ("A", "close")]
    # the default judge still heads summary.json; C is named per node
    assert summary["judge"]["profile"] == "A"
    assert summary["node_judges"]["geval"]["profile"] == "C"


def test_a_judge_later_shards_need_stays_open_across_shards(tmp_path: Path) -> None:
    """Two shards of one case: B (redteam) is opened once and closed once, in the last shard,
    not reloaded per shard; A likewise."""
    summary, log, openers = run(tmp_path, {"redteam": "B"}, shard_size=1)
    assert openers["A"].opened == openers["B"].opened == 1
    assert log.count(("B", "close")) == log.count(("A", "close")) == 1
    assert log[-1] == ("A", "close") and log.index(("B", "close")) > log.index(("A", "geval"))
    assert summary["cases"]["valid"] == 2


def test_every_node_on_its_own_judge_leaves_the_default_unopened(tmp_path: Path) -> None:
    summary, _, openers = run(tmp_path, {"redteam": "B", "geval_steps": "B", "geval": "B"})
    assert openers["A"].opened == 0
    assert summary["judge"]["profile"] == "B"  # the first judge that ran stands in


def test_the_closing_plan() -> None:
    from nexagauge_local.nodes.base import RunContext

    specs = [s for s in GRAPH.plan("eval") if s.per_case]
    ctx = RunContext(RunSettings(), lambda: None,  # type: ignore[arg-type, return-value]
                     node_judges={"claims": NodeJudge("S", lambda: None)})  # type: ignore[arg-type, return-value]
    done = judges_done_after(specs, ctx)
    names = {s.name: i for i, s in enumerate(specs)}
    assert done == {names["claims"]: ["S"], names["atomic_units"]: [""]}


# ---------------------------------------------------------------- the CLI: bad items, exit 2


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.mark.parametrize(("item", "says"), [
    ("nosuch=demo", "'nosuch' is not an LLM node; choose one of: claims, relevance, grounding"),
    ("refmatch=demo", "'refmatch' is not an LLM node"),
    ("redteam=", "expected NODE=PROFILE"),
    ("=demo", "expected NODE=PROFILE"),
])
def test_a_bad_node_model_is_one_line_exit_2(tmp_path: Path, item: str, says: str) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    for cmd in (["run", "eval", "--output-dir", str(tmp_path / "out")], ["estimate", "eval"]):
        result = cli(*cmd, "--input", str(data), "--model", item)
        assert result.exit_code == 2, result.output
        assert says in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_two_defaults_or_a_node_named_twice_is_exit_2(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    out = str(tmp_path / "out")
    result = cli("run", "eval", "--input", str(data), "--output-dir", out,
                 "--model", "demo", "--model", "other")
    assert result.exit_code == 2 and "a second default judge" in result.output
    result = cli("run", "eval", "--input", str(data), "--output-dir", out,
                 "--model", "redteam=demo", "--model", "redteam=other")
    assert result.exit_code == 2 and "redteam already has --model redteam=demo" in result.output


def test_a_node_judge_that_cannot_load_is_refused_before_any_work_naming_the_node(
        tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    out = tmp_path / "out"
    result = cli("run", "redteam", "--input", str(data), "--output-dir", str(out), "-q",
                 "--cache-dir", str(tmp_path / "c"), "--model", "redteam=no-such-profile")
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("Error: --model redteam=no-such-profile: unknown judge model "
                           "'no-such-profile': not a profile (demo, ")
    assert "qwen2.5-7b-instruct" in line and "llama-guard-3-8b" in line
    assert line.endswith(") nor a path")
    assert not out.exists()


def test_the_library_refuses_an_unknown_node_too(tmp_path: Path) -> None:
    from nexagauge_local import evaluate
    from nexagauge_local.app.errors import JudgeSetupError

    with pytest.raises(JudgeSetupError, match="'refalign' is not an LLM node"):
        evaluate(ROWS, target="redteam", node_models={"refalign": "demo"}, cache_dir=tmp_path)


def test_estimate_names_each_nodes_judge(tmp_path: Path) -> None:
    """estimate counts each node's prompt tokens with its own judge's tokenizer: the demo
    judge under a second profile name says which profile each node's figures are for."""
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    other = second_demo_profile(tmp_path)
    result = CliRunner().invoke(main, ["estimate", "geval", "--input", str(data), "--json",
                                       "--cache-dir", str(tmp_path / "c"),
                                       "--model", f"geval_steps={other}"])
    assert result.exit_code == 0, result.output
    nodes = json.loads(result.stdout)["nodes"]
    assert nodes["geval_steps"]["judge"]["profile"] == str(other)
    assert nodes["geval"]["judge"]["profile"] == "demo"
    assert nodes["geval"]["judge"]["requests"] == 2


def second_demo_profile(tmp_path: Path) -> Path:
    """The demo judge's profile under another name: the same weights, another fingerprint (so
    cache keys, summary.json and the manifest can tell the two judges apart)."""
    from nexagauge_local.judge.profiles import shipped_profile_files

    demo = next(p for p in shipped_profile_files() if p.stem == "demo")
    text = demo.read_text(encoding="utf-8").replace('name = "demo"', 'name = "demo-b"')
    path = tmp_path / "demo-b.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_judge_for_a_node_the_target_does_not_run_is_noted_and_not_loaded(
        tmp_path: Path) -> None:
    """A profile that would not even resolve is never pre-flighted when its node is not in
    the plan (a shared configuration may name every node's judge): the run says so."""
    from nexagauge_local.app.run import run as app_run
    from nexagauge_local.events import LogEvents
    from nexagauge_local.graph import BLOCKS

    class Notes(LogEvents):
        def __init__(self) -> None:
            self.notes: list[str] = []

        def note(self, text: str) -> None:
            self.notes.append(text)

    data = write_jsonl(tmp_path / "data.jsonl", [{"output": "a.", "reference": "a."}])
    settings = RunSettings(target="refmatch", cache_dir=tmp_path / "c", progress=False,
                           node_models={"redteam": "no-such-profile"})
    events = Notes()
    result = app_run(settings, lambda _: Dataset(data, blocks=BLOCKS), events=events)
    assert result.cases["valid"] == 1
    assert events.notes == [
        "refmatch does not run redteam=no-such-profile: those judges are not used"]


def test_compare_warns_when_a_nodes_own_judge_changed(tmp_path: Path) -> None:
    """Same default judge, another judge on redteam: compare says so for that node."""
    from nexagauge_local.compare.diff import judge_check
    from nexagauge_local.compare.load import RunDir
    from tests.test_compare import redteam_metric, write_run

    cases = {"c1": {"redteam": [redteam_metric("toxicity", True)]}}
    runs = []
    for name, redteam_fp in (("a", "guard@1"), ("b", "guard@2")):
        run = write_run(tmp_path / name, cases, fingerprint="main@1")
        summary = json.loads((run / "summary.json").read_text())
        summary["node_judges"] = {"redteam": {"fingerprint": redteam_fp},
                                  "geval": {"fingerprint": "main@1"}}
        (run / "summary.json").write_text(json.dumps(summary))
        runs.append(RunDir(run))
    check = judge_check(runs[0], runs[1])
    assert check.same_fingerprint is True
    assert check.warnings == ["different judges for nodes: redteam: guard@1 -> guard@2"]
    assert judge_check(runs[0], runs[0]).warnings == []


def test_the_command_line_completes_a_configs_judges_rather_than_dropping_them() -> None:
    from nexagauge_local.cli.options import parse_models

    config = ("qwen2.5-7b-instruct", "geval=demo")
    assert parse_models(("redteam=llama-3.1-8b-instruct",), config) == (
        "qwen2.5-7b-instruct", {"geval": "demo", "redteam": "llama-3.1-8b-instruct"})
    assert parse_models(("demo", "geval=prometheus-2-7b"), config) == (
        "demo", {"geval": "prometheus-2-7b"})
    assert parse_models((), ()) == ("demo", {})


def test_the_judge_server_options_describe_the_default_judge_only() -> None:
    from nexagauge_local.app.judge import with_model
    from nexagauge_local.settings import EndpointOptions

    settings = RunSettings(target="redteam", model="demo", judge_url="http://127.0.0.1:9/v1",
                           judge_concurrency=4, judge_revision="r1",
                           node_models={"redteam": "guard.toml"})
    assert with_model(settings, "demo") is settings
    own = with_model(settings, "guard.toml")
    assert own.model == "guard.toml"
    assert own.endpoint == EndpointOptions()  # the default judge's server is not its
