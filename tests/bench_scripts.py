"""Loading and running scripts/bench_*.py from tests (scripts/ is not a package)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(name: str) -> ModuleType:
    """scripts/NAME.py as a module, without running its main."""
    spec = importlib.util.spec_from_file_location(f"_script_{name}", ROOT / "scripts" / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_script(name: str, *args: str, env: dict[str, str] | None = None,
               timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python scripts/NAME.py ARGS` from the repository root, as a user runs it; output text."""
    return subprocess.run([sys.executable, str(ROOT / "scripts" / f"{name}.py"), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)  # fmt: skip
