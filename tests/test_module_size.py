"""Every module of the package and of scripts/ stays small enough to read in one sitting.

Why a test: a module grows one convenient function at a time (scripts/benchlib/parity.py had
reached 601 lines before its reason ladders moved out), and a limit that is only written in a
guide is noticed after the fact. Tests are left out: a test file lists cases, not logic.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ("nexagauge_local", "scripts")
MAX_LINES = 420  # "about 400": a little room so a docstring fix never breaks the build


def oversized(root: Path, folders: tuple[str, ...] = CHECKED, limit: int = MAX_LINES) -> list[str]:
    """'path: N lines' for every .py file under root/folder longer than limit."""
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            n = len(path.read_text(encoding="utf-8").splitlines())
            if n > limit:
                found.append(f"{path.relative_to(root)}: {n} lines")
    return found


def test_no_module_is_over_the_limit() -> None:
    assert oversized(ROOT) == []


def test_the_size_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "small.py").write_text("x = 1\n" * 3)
    (tmp_path / "pkg" / "big.py").write_text("x = 1\n" * 5)
    assert oversized(tmp_path, ("pkg",), limit=4) == ["pkg/big.py: 5 lines"]
