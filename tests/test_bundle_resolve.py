"""`bundle build` keeps the target's versions where it can: with a freeze, a conflict gives
up only the constraints pip names, one round each, so the bundle carries only what the target
lacks or must replace. Checked with pip's real resolver and messages, offline."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from nexagauge_local.bundle.build import _resolve_keeping_the_target
from nexagauge_local.bundle.pip import ConstraintConflict, Pip, PipFailed, Resolved
from nexagauge_local.bundle.target import Target
from tests.test_bundle import tiny_wheel


def test_only_the_conflicting_version_is_given_up(tmp_path: Path) -> None:
    """The target has a 2.0 (too new for b) and c 1.0 (fine, though 1.1 exists): a is
    replaced, c stays the target's, and the step says which version went."""
    links = tmp_path / "links"
    for name, version, req in (("nxg_rx_a", "1.0", ()), ("nxg_rx_a", "2.0", ()),
                               ("nxg_rx_b", "1.0", ("nxg_rx_a<2",)),
                               ("nxg_rx_c", "1.0", ()), ("nxg_rx_c", "1.1", ()),
                               ("nxg_rx_d", "1.0", ("nxg_rx_b", "nxg_rx_c"))):  # fmt: skip
        tiny_wheel(links, tmp_path / "src", name, version, req)
    pip = Pip(find_links=(links,), no_index=True, progress=False)
    target = Target(python="3.12", platform="manylinux_2_28_x86_64", torch="2.11.0",
                    installed={"torch": "2.11.0", "nxg-rx-a": "2.0", "nxg-rx-c": "1.0"})  # fmt: skip
    said: list[str] = []
    resolved = _resolve_keeping_the_target(pip, ["nxg_rx_d"], target, True, said.append)
    got = {r.name.replace("_", "-"): r.version for r in resolved}
    assert got == {"nxg-rx-a": "1.0", "nxg-rx-b": "1.0", "nxg-rx-c": "1.0", "nxg-rx-d": "1.0"}
    expected = ("vLLM's dependencies need other versions than the target's nxg-rx-a==2.0: "
                "carrying them (the target's other versions stay fixed)")  # fmt: skip
    assert said == [expected]

    # without a freeze nothing is given up: the conflict is the error
    with pytest.raises(ConstraintConflict) as caught:
        _resolve_keeping_the_target(pip, ["nxg_rx_d"], target, False, said.append)
    assert [n.replace("_", "-") for n in caught.value.names] == ["nxg-rx-a"]


class _ScriptedPip:
    """resolve() raises what it is given, in turn, then answers; records the constraints."""

    def __init__(self, *failures: PipFailed) -> None:
        self.failures = list(failures)
        self.seen: list[list[str]] = []

    def resolve(self, roots: Sequence[str], target: Target,
                constraints: Sequence[str]) -> list[Resolved]:  # fmt: skip
        self.seen.append(list(constraints))
        if self.failures:
            raise self.failures.pop(0)
        return [Resolved("vllm", "0.26.0", "https://x/vllm.whl")]

    def download(self, pins: Sequence[str], target: Target | None, dest: Path) -> None:
        raise AssertionError("not called")

    def project_wheel(self, root: Path, dest: Path) -> Path:
        raise AssertionError("not called")


TARGET = Target(python="3.12", platform="manylinux_2_39_x86_64", torch="2.11.0+cu130",
                installed={"torch": "2.11.0+cu130", "numpy": "2.5.2", "scipy": "1.17.0"})  # fmt: skip


def test_a_conflict_that_names_no_constraint_keeps_only_torch() -> None:
    pip = _ScriptedPip(ConstraintConflict("x", ["numpy"]), PipFailed("no explanation"))
    said: list[str] = []
    _resolve_keeping_the_target(pip, ["vllm==0.26.0"], TARGET, True, said.append)
    assert pip.seen == [["numpy==2.5.2", "scipy==1.17.0", "torch==2.11.0"],
                        ["scipy==1.17.0", "torch==2.11.0"],
                        ["torch==2.11.0"]]  # fmt: skip
    assert said[-1] == "the target's versions conflict with vLLM's pins; keeping only torch fixed"


def test_torch_is_never_given_up() -> None:
    pip = _ScriptedPip(ConstraintConflict("x", ["torch"]))
    said: list[str] = []
    _resolve_keeping_the_target(pip, ["vllm==0.26.0"], TARGET, True, said.append)
    assert pip.seen[-1] == ["torch==2.11.0"] and len(pip.seen) == 2
