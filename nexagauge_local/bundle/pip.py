"""pip, the ordinary client, as the bundle's resolver, downloader and wheel builder.

Why pip and not a resolver of our own: `pip install --dry-run --report` with the target's
`--python-version/--platform` runs pip's own resolver for the target and reads PyPI's
metadata files (a few KB per candidate) instead of the wheels, so only what the target lacks
is downloaded afterwards, with `pip download --no-deps` of the exact pins.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nexagauge_local.bundle.target import Target

_NO_MATCH = re.compile(r"No matching distribution found for (?P<spec>\S+)")
# pip's explanation of a ResolutionImpossible names each constraint that takes part in it
_CONSTRAINT_IN_CONFLICT = re.compile(
    r"The user requested \(constraint\) (?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*=="
)


class PipFailed(RuntimeError):
    """pip could not resolve, download or build; the message is one line."""


class ConstraintConflict(PipFailed):
    """Resolution is impossible with these constraints (names as pip printed them): the
    caller may drop them and try again."""

    def __init__(self, message: str, names: Sequence[str]) -> None:
        super().__init__(message)
        self.names = tuple(names)


@dataclass(frozen=True)
class Resolved:
    """One distribution pip chose for the target."""

    name: str
    version: str
    url: str
    requires_dist: tuple[str, ...] = ()


@dataclass
class Pip:
    """pip of this interpreter, with the index options the user gave.

    `find_links` folders are searched beside (or, with `no_index`, instead of) the index;
    wheels built here for projects without a wheel are put in `built` and searched too.
    """

    python: str = sys.executable
    find_links: tuple[Path, ...] = ()
    no_index: bool = False
    progress: bool = True
    built: Path | None = None
    _made: list[str] = field(default_factory=list)

    def _index_args(self) -> list[str]:
        args = ["--no-index"] if self.no_index else []
        for d in (*self.find_links, *([self.built] if self.built else [])):
            args += ["--find-links", str(d)]
        return args

    def _run(self, args: Sequence[str], what: str, capture: bool = True) -> str:
        cmd = [self.python, "-m", "pip", *args]
        proc = subprocess.run(cmd, capture_output=capture, text=True, check=False)
        if proc.returncode != 0:
            if not capture:
                raise PipFailed(f"{what} failed (pip exit {proc.returncode}; its output is above)")
            raise PipFailed(f"{what} failed: {_last_error(proc.stderr)}")
        return proc.stdout or ""

    def resolve(
        self, roots: Sequence[str], target: Target, constraints: Sequence[str]
    ) -> list[Resolved]:
        """Every distribution ROOTS need on TARGET under CONSTRAINTS (metadata only).

        A project with no wheel at all (rouge-score ships only an sdist) is built here once
        and kept only if the result is pure Python, the one kind built here that runs there.
        """
        with tempfile.TemporaryDirectory(prefix="nexagauge-bundle-") as tmp:
            cfile = Path(tmp) / "constraints.txt"
            cfile.write_text("".join(f"{c}\n" for c in constraints))
            report = Path(tmp) / "report.json"
            for _ in range(12):  # one round per sdist-only project found
                # not --quiet: pip explains a conflict only at its normal verbosity
                args = ["install", "--dry-run", "--progress-bar", "off", "--report", str(report),
                        "--target", str(Path(tmp) / "never-written"), "-c", str(cfile),
                        *target.pip_args(), *self._index_args(), *roots]  # fmt: skip
                cmd = [self.python, "-m", "pip", *args]
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if proc.returncode == 0:
                    return _report(json.loads(report.read_text()))
                said = proc.stdout + proc.stderr
                conflict = sorted({m["name"] for m in _CONSTRAINT_IN_CONFLICT.finditer(said)})
                if conflict:
                    raise ConstraintConflict(
                        f"resolving for the target failed: {_last_error(proc.stderr)}", conflict
                    )
                missing = _NO_MATCH.search(proc.stderr)
                if missing is None or missing["spec"] in self._made or self.no_index:
                    raise PipFailed(f"resolving for the target failed: {_last_error(proc.stderr)}")
                self._made.append(missing["spec"])
                self.build_pure(missing["spec"], target)
        raise PipFailed("resolving for the target failed: too many projects without wheels")

    def build_pure(self, spec: str, target: Target) -> Path:
        """`pip wheel --no-deps SPEC` here; accepted only as a pure-Python (`-none-any`) wheel."""
        if self.built is None:
            raise PipFailed(f"{spec}: no wheel for the target and nowhere to build one")
        before = set(self.built.glob("*.whl"))
        try:
            self._run(["wheel", "--no-deps", "--quiet", "-w", str(self.built), spec],
                      f"building a wheel for {spec}")  # fmt: skip
        except PipFailed:
            pass  # said below, in terms of the target
        new = sorted(set(self.built.glob("*.whl")) - before)
        if not new or not all(p.name.endswith("-none-any.whl") for p in new):
            raise PipFailed(
                f"{spec}: no wheel for Python {target.python_minor} on {target.platform}, and "
                "it does not build as pure Python here (a newer glibc platform, or another "
                "release, may have one)"
            )
        return new[-1]

    def download(self, pins: Sequence[str], target: Target | None, dest: Path) -> None:
        """`pip download --no-deps` of exact pins into DEST (pip shows its own progress)."""
        if not pins:
            return
        dest.mkdir(parents=True, exist_ok=True)
        quiet = [] if self.progress else ["--quiet"]
        plat = target.pip_args() if target else ["--only-binary=:all:"]
        self._run(["download", "--no-deps", *quiet, "-d", str(dest), *plat,
                   *self._index_args(), *pins],
                  f"pip download of {len(pins)} wheel(s)", capture=not self.progress)  # fmt: skip

    def project_wheel(self, root: Path, dest: Path) -> Path:
        """This project's wheel from its source tree (`pip wheel --no-deps`, pure Python)."""
        dest.mkdir(parents=True, exist_ok=True)
        before = set(dest.glob("nexagauge_local-*.whl"))
        self._run(["wheel", "--no-deps", "--no-build-isolation", "--quiet", "-w", str(dest),
                   str(root)], f"pip wheel {root}")  # fmt: skip
        made = sorted(set(dest.glob("nexagauge_local-*.whl")) - before) or sorted(
            dest.glob("nexagauge_local-*.whl")
        )
        if not made:
            raise PipFailed(f"pip wheel {root} wrote no nexagauge_local wheel")
        return made[-1]


def _report(report: dict[str, object]) -> list[Resolved]:
    out = []
    for item in report.get("install", []):  # type: ignore[attr-defined]
        meta = item["metadata"]
        out.append(Resolved(
            name=meta["name"], version=meta["version"], url=item["download_info"]["url"],
            requires_dist=tuple(meta.get("requires_dist") or ()),
        ))  # fmt: skip
    return out


def _last_error(stderr: str) -> str:
    """pip's most telling line: its last ERROR line, else its last line."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR")]
    return (errors or lines or ["(no output)"])[-1][:300]
