"""Several local engines of one command on the same GPU: `attack` holds the judge's (and the
attacker's) engine and the model under test's at once. vLLM reserves a fixed share of a GPU's
*total* memory when an engine starts and refuses to start when less is free, so two engines
at its default 0.9 cannot both start on one GPU; each local vLLM engine then reserves 1/N of
it. Checked on a faked one-GPU host: the decisions, the engine arguments they give, and what
`attack` says."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from nexagauge_local.cli import main
from nexagauge_local.judge.decision import JudgeDecision
from nexagauge_local.judge.profiles import JudgeProfile
from nexagauge_local.judge.vllm.engine import engine_kwargs
from nexagauge_local.judge.vllm.host import engine_hosts, host_engine_kwargs
from nexagauge_local.redteam.service.attack import local_engines
from tests.host_fakes import fake_gpus
from tests.test_attack_campaign import probes_file
from tests.test_generate import EchoResponder

PROFILE = JudgeProfile(name="p", weights="/models/p")


def _decision(backend: str = "vllm", device: str = "cuda") -> JudgeDecision:
    return JudgeDecision(profile="p", backend=backend, grammar="xgrammar", dtype="bfloat16",  # type: ignore[arg-type]
                         device=device, gpu_ids=("0",) if device == "cuda" else (),  # type: ignore[arg-type]
                         reason="test", fingerprint="f")  # fmt: skip


def test_a_shared_vllm_engine_reserves_its_part_of_the_gpu() -> None:
    shared = _decision().shared_by(2, "the judge and the target")
    assert shared.gpu_share == 0.5
    assert shared.notes[-1] == ("the judge and the target share the GPUs: each vLLM engine "
                                "reserves 45% of each one's memory")  # fmt: skip
    host = engine_hosts("cuda", shared.gpu_ids, PROFILE, False, gpu_share=shared.gpu_share)[0]
    assert host.gpu_share == 0.5
    kwargs = engine_kwargs("/m", PROFILE, "bfloat16", 0, 1, device="cuda",
                           gpu_share=shared.gpu_share)  # fmt: skip
    assert kwargs["gpu_memory_utilization"] == 0.45
    assert host_engine_kwargs("cuda", PROFILE, 1 / 3)["gpu_memory_utilization"] == 0.3


@pytest.mark.parametrize(
    ("decision", "engines"),
    [(_decision(), 1), (_decision("hf"), 2), (_decision(device="cpu"), 2)],
    ids=["alone", "hf-reserves-nothing", "cpu-holds-no-gpu"],
)
def test_what_holds_no_gpu_reservation_is_left_as_it_is(decision: JudgeDecision,
                                                       engines: int) -> None:  # fmt: skip
    assert decision.shared_by(engines, "x") is decision


def test_an_engine_alone_keeps_vllms_default() -> None:
    assert "gpu_memory_utilization" not in host_engine_kwargs("cuda", PROFILE)
    # on a CPU host the KV cache is sized explicitly, never by a share of memory
    assert "gpu_memory_utilization" not in host_engine_kwargs("cpu", PROFILE, 0.5)


def test_local_engines_of_an_attack(tmp_path: Path) -> None:
    server = tmp_path / "team.toml"  # a judge served elsewhere holds no GPU here
    server.write_text('backend = "endpoint"\nurl = "http://127.0.0.1:1/v1"\n')
    assert local_engines(str(server), None, target_is_local=True) == 1
    assert local_engines(str(server), "demo", target_is_local=True) == 2
    assert local_engines("demo", None, target_is_local=True) == 2
    assert local_engines("demo", "demo", target_is_local=True) == 2  # one engine serves both
    assert local_engines("demo", "qwen2.5-7b-instruct", target_is_local=True) == 3
    assert local_engines("demo", None, target_is_local=False) == 1
    assert local_engines("no-such-profile", None, target_is_local=True) == 2


def test_attack_on_one_gpu_gives_the_judge_and_the_target_half_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`attack --backend vllm --gpu 0` with an attacker-driven strategy on a one-GPU host:
    the target's and the judge's decisions each reserve 45%, and the note is said once. The
    engines themselves are not started (no GPU here): the target is an echo, and the driven
    conversations stop at the decisions."""
    from nexagauge_local.redteam.service import attack as attack_service
    from nexagauge_local.redteam.service import generate as generate_service

    fake_gpus(monkeypatch, 1)
    seen: dict[str, Any] = {}

    def make_responder(profile: object, decision: JudgeDecision, **_: object) -> EchoResponder:
        seen["target"] = decision
        return EchoResponder()

    def run_driven(plan: object, responder: object, askers: Any, *a: object,
                   **k: object) -> SimpleNamespace:  # fmt: skip
        seen["judge"] = askers.judge.decision
        return SimpleNamespace(conversations=1, skipped_existing=0, restored=0, rounds=0,
                               successes=0, attacker_unparsed=0, wall_seconds=0.0)  # fmt: skip

    monkeypatch.setattr(generate_service, "make_responder", make_responder)
    monkeypatch.setattr(attack_service, "run_driven", run_driven)
    res = CliRunner().invoke(main, [
        "attack", "--model", "demo", "--backend", "vllm", "--gpu", "0", "--judge", "demo",
        "--input", str(probes_file(tmp_path)), "--output", str(tmp_path / "o.jsonl"),
        "--strategies", "multi-turn-escalation", "-q"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert seen["target"].device == "cuda" and seen["target"].gpu_share == 0.5
    assert seen["judge"].backend == "vllm" and seen["judge"].gpu_share == 0.5
    note = "each vLLM engine reserves 45% of each one's memory"
    assert res.output.count(note) == 1


def test_a_run_with_two_local_judges_on_one_gpu_gives_each_half(
    tiny_judge_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run --model demo --model redteam=FOLDER --gpu 0`: the run holds both judges' engines
    until its last node, so each vLLM engine reserves 45%, and both say so. One judge alone
    keeps vLLM's default."""
    from nexagauge_local.app.judge import preflight_judges
    from nexagauge_local.settings import RunSettings

    fake_gpus(monkeypatch, 1)
    two = RunSettings(model="demo", backend="vllm", gpu_ids=[0],
                      node_models={"redteam": str(tiny_judge_dir)})  # fmt: skip
    judges = preflight_judges(two, ["grounding", "redteam"])
    assert [f.decision.gpu_share for f in judges.values()] == [0.5, 0.5]
    assert all(f.decision.notes[-1].startswith("the run's 2 judges (demo, ")
               for f in judges.values())  # fmt: skip
    one = preflight_judges(two, ["grounding"])
    assert [f.decision.gpu_share for f in one.values()] == [1.0]
