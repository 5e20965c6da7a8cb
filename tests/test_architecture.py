"""The package's import graph stays layered: no circle, and no module imports a layer above it.

Why a test: the package once had a judge <-> cluster circle and a node table spread over four
files; an import graph drifts back one convenient import at a time, so it is checked on every
CI run. Imports are read from the source (ast), including imports inside functions, because a
lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "nexagauge_local"

# Lowest first. A module may import its own layer or a lower one.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("settings", "redact", "blocks", "case", "readers", "chat", "records", "dataset", "results",
     "case_report", "embed", "scoring", "libc", "lone_surrogates", "memo", "sqlite_store",
     "events", "redteam", "redteam.suites", "redteam.heuristics", "redteam.outcomes",
     "redteam.attacks"),
    ("judge",),
    ("cluster", "redteam.target"),
    ("nodes",),
    ("graph",),
    ("runner", "estimate", "report", "compare", "gate", "agreement", "audit", "bundle",
     "redteam.campaign"),
    ("app", "api", "redteam.service"),
    ("cli", "__init__", "__main__"),
)
LAYER_OF = {name: i for i, names in enumerate(LAYERS) for name in names}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


# The red-team wing is one package for its reader, but its parts sit at the layers of what they
# do (a suite reader is as low as records, the target runs engines, the services call both), so
# each of its sub-packages is a layer unit of its own.
SPLIT_PACKAGES = frozenset({"redteam"})


def _top(module: str) -> str:
    """The layer unit of a module: nexagauge_local.judge.client -> judge,
    nexagauge_local.redteam.suites.bundled -> redteam.suites."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in SPLIT_PACKAGES:
        return f"{parts[1]}.{parts[2]}"
    return parts[1] if len(parts) > 1 else "__init__"


def import_graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PKG.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            for t in targets:
                if t in modules and t != name:
                    graph[name].add(t)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def upward(graph: dict[str, set[str]]) -> list[str]:
    out = []
    for src, dsts in graph.items():
        for dst in dsts:
            a, b = _top(src), _top(dst)
            if a != b and LAYER_OF[b] > LAYER_OF[a]:
                out.append(f"{src} -> {dst}")
    return sorted(out)


# judge's surface: its package and its sub-packages' __init__ (prompts for node authors,
# runtime for devices/weights/tokenizers, the two engines, the guard formats). Code outside
# judge/ imports from these, never from a module inside, so judge's files can move freely.
JUDGE = "nexagauge_local.judge"
JUDGE_SURFACE = frozenset(
    {JUDGE, f"{JUDGE}.prompts", f"{JUDGE}.runtime", f"{JUDGE}.hf", f"{JUDGE}.vllm",
     f"{JUDGE}.endpoint", f"{JUDGE}.formats"}
)


def past_surface(graph: dict[str, set[str]]) -> list[str]:
    """Imports from outside judge/ that reach a judge module other than its surface."""
    out = []
    for src, dsts in graph.items():
        if src == JUDGE or src.startswith(f"{JUDGE}."):
            continue
        out += [f"{src} -> {d}" for d in dsts
                if d.startswith(f"{JUDGE}.") and d not in JUDGE_SURFACE]
    return sorted(out)


def test_every_module_has_a_layer() -> None:
    assert len(import_graph()) > 50, f"no package found at {PKG}"
    unknown = sorted({_top(m) for m in import_graph()} - set(LAYER_OF))
    assert not unknown, f"add these to LAYERS in {Path(__file__).name}: {unknown}"


def test_no_import_circle() -> None:
    assert circles(import_graph()) == []


def test_no_upward_import() -> None:
    assert upward(import_graph()) == []


def test_nothing_reaches_past_the_judge_surface() -> None:
    assert past_surface(import_graph()) == []
    assert {f"{JUDGE}.{s}" for s in ("prompts", "runtime", "hf", "vllm")} <= set(import_graph())


def test_the_surface_check_can_fail() -> None:
    g = {"nexagauge_local.nodes.x": {f"{JUDGE}.client", JUDGE, f"{JUDGE}.vllm"},
         f"{JUDGE}.client": {f"{JUDGE}.cache"}}
    assert past_surface(g) == [f"nexagauge_local.nodes.x -> {JUDGE}.client"]


@pytest.mark.parametrize("edge", [("a", "b"), ("b", "a")])
def test_the_checks_can_fail(edge: tuple[str, str]) -> None:
    """A circle and an upward arrow are detected (the checks above are not vacuous)."""
    g = {"nexagauge_local.judge.x": {"nexagauge_local.cli.y"}, "nexagauge_local.cli.y": set()}
    assert upward(g) == ["nexagauge_local.judge.x -> nexagauge_local.cli.y"]
    a, b = (f"nexagauge_local.judge.{n}" for n in edge)
    assert circles({a: {b}, b: {a}}) == [sorted([a, b])]


# Printing belongs to cli/: services emit events (events.py) or return data, and
# cli/ renders them. Outside cli/ no module may import a terminal library (rich, click) or
# write to the terminal (print(), sys.stdout / sys.stderr). Allow-list: none needed today;
# a module that truly must (e.g. rich rendering into a *file*) goes here with a comment why.
PRINTING_ALLOWED: frozenset[str] = frozenset()
TERMINAL_LIBS = ("rich", "click")


def terminal_output(path: Path) -> list[str]:
    """What in one module's source prints or reaches for a terminal library, as 'line: what'."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        found += [f"{node.lineno}: import {n}" for n in names
                  if n.split(".")[0] in TERMINAL_LIBS]
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "print"):
            found.append(f"{node.lineno}: print()")
        if (isinstance(node, ast.Attribute) and node.attr in ("stdout", "stderr")
                and isinstance(node.value, ast.Name) and node.value.id == "sys"):
            found.append(f"{node.lineno}: sys.{node.attr}")
    return found


def printing_outside_cli() -> dict[str, list[str]]:
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        name = _module_name(path)
        if _top(name) in ("cli", "__main__") or name in PRINTING_ALLOWED:
            continue
        if hits := terminal_output(path):
            out[name] = hits
    return out


def test_only_cli_prints() -> None:
    assert printing_outside_cli() == {}


def test_the_printing_check_can_fail(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text("import sys\nfrom rich.console import Console\nimport click\n"
                   "def f():\n    print('x')\n    sys.stderr.write('y')\n    fingerprint('z')\n",
                   encoding="utf-8")
    assert terminal_output(src) == ["2: import rich.console", "3: import click",
                                    "5: print()", "6: sys.stderr"]
