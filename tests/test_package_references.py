"""What the package's comments point at exists, and the one claim about process state holds.

Why a test: the package's comments once sent readers to design notes and specs kept outside
the repository (DESIGN.md, shared/spec/*.md, data-schema.md), and to a `pin_engine_devices`
"one place" that nothing called. A reader of the repository alone could follow none of it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "nexagauge_local"
TEXT_SUFFIXES = {".py", ".j2", ".toml", ".js", ".css"}
# Documents of the project's early notes, never part of this repository.
OUTSIDE = ("DESIGN.md", "shared/spec", "data-schema")
MD_REF = re.compile(r"[\w./-]*\w\.md\b")


def _package_texts() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
            for p in sorted(PKG.rglob("*")) if p.suffix in TEXT_SUFFIXES}  # fmt: skip


def _repo_markdown() -> tuple[set[str], set[str]]:
    """(paths, bare names) of every markdown file the repository holds (build outputs and
    virtual environments aside)."""
    found = [p.relative_to(ROOT) for p in ROOT.rglob("*.md")
             if not {".venv", ".git", "out", "build", "node_modules"} & set(p.parts)]  # fmt: skip
    return {str(p) for p in found}, {p.name for p in found}


def missing_documents(texts: dict[str, str]) -> list[str]:
    """`FILE: NAME` for each document named in TEXTS that the repository does not hold: a path
    must exist from the repository root, a bare name must be some markdown file's name."""
    paths, names = _repo_markdown()
    bad: list[str] = []
    for file, text in texts.items():
        bad += [f"{file}: {o}" for o in OUTSIDE if o in text]
        for ref in MD_REF.findall(text):
            held = ref in paths if "/" in ref else ref in names
            if not held and not any(o in ref for o in OUTSIDE):
                bad.append(f"{file}: {ref}")
    return bad


def test_package_files_point_only_at_documents_the_repository_holds() -> None:
    assert missing_documents(_package_texts()) == []


@pytest.mark.parametrize("text", ["see DESIGN.md section 5", "shared/spec/redteam-node.md",
                                  "(data-schema.md, Redteam Shape)", "spec probe-scoring.md",
                                  "docs/nowhere.md"])  # fmt: skip
def test_the_reference_check_can_fail(text: str) -> None:
    assert missing_documents({"x.py": text})
    assert missing_documents({"x.py": "README.md, docs/gpu.md, models/README.md"}) == []


def cuda_visible_devices_writers(texts: dict[str, str]) -> set[str]:
    """Python files that set CUDA_VISIBLE_DEVICES: an item assignment, a setdefault/update/
    putenv call naming it, or a dict literal keyed by it (an environment to apply)."""
    name = "CUDA_VISIBLE_DEVICES"

    def is_name(node: ast.AST | None) -> bool:
        return isinstance(node, ast.Constant) and node.value == name

    writers: set[str] = set()
    for file, text in texts.items():
        if not file.endswith(".py"):
            continue
        for node in ast.walk(ast.parse(text)):
            hit = (
                (isinstance(node, (ast.Assign, ast.AugAssign))
                 and any(isinstance(t, ast.Subscript) and is_name(t.slice)
                         for t in (node.targets if isinstance(node, ast.Assign) else [node.target])))
                or (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in {"setdefault", "putenv", "update"}
                    and any(is_name(a) for a in node.args))
                or (isinstance(node, ast.Dict) and any(is_name(k) for k in node.keys))
            )  # fmt: skip
            if hit:
                writers.add(file)
    return writers


def test_cuda_visible_devices_has_one_writer() -> None:
    """judge/vllm/host.py's EngineHost.apply is the one place the package sets it (its
    docstring, and devices.py's, judge/factory.py's and redteam/target/factory.py's say so)."""
    assert cuda_visible_devices_writers(_package_texts()) == {"nexagauge_local/judge/vllm/host.py"}
    fake = {"a.py": 'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"',
            "b.py": 'import os\nos.environ.setdefault("CUDA_VISIBLE_DEVICES", "0")',
            "c.py": 'import os\nx = os.environ.get("CUDA_VISIBLE_DEVICES")'}  # fmt: skip
    assert cuda_visible_devices_writers(fake) == {"a.py", "b.py"}
