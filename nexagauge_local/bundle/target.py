"""The host a bundle is built for: its Python, platform, torch, and what it already has.

A `pip freeze` of the target says what is installed (torch among it) but not which Python or
glibc it runs, so a freeze may carry two comment lines that the command in `FREEZE_COMMAND`
writes; flags on the command line override them.
"""

from __future__ import annotations

import re
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict

# Run on the target (docs/gpu.md and `bundle build --help` show it inside a shell command that
# appends `pip freeze`): the two header lines `parse_freeze` reads.
FREEZE_HEADER = (
    'import platform as p; print("# python:", p.python_version()); '
    'print("# platform: manylinux_%s_%s" % (p.libc_ver()[1].replace(".", "_"), p.machine()))'
)
_MANYLINUX = re.compile(r"manylinux_2_(?P<minor>\d+)_(?P<arch>x86_64|aarch64)")
_PYTHON = re.compile(r"3\.\d+(\.\d+)?")
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*==\s*(?P<ver>\S+)$")
_URL = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*@\s*\S+$")
_HEADER = re.compile(r"^#\s*(?P<key>python|platform)\s*:\s*(?P<value>\S+)\s*$")
OLDEST_MANYLINUX = 17  # manylinux2014 = manylinux_2_17, the oldest tag wheels still use


class TargetError(ValueError):
    """A freeze line or a target option that cannot be used (the message names it)."""


class Target(BaseModel):
    """What the bundle must fit: pip's target options and the versions already installed."""

    model_config = ConfigDict(frozen=True)

    python: str  # "3.12" or "3.12.3"
    platform: str  # "manylinux_2_28_x86_64"
    torch: str  # "2.11.0+cu130"
    installed: dict[str, str] = {}  # canonical name -> version; {} when no freeze was given

    @property
    def python_minor(self) -> str:
        return ".".join(self.python.split(".")[:2])

    def pip_args(self) -> list[str]:
        """pip's options for the target. pip matches manylinux tags exactly, so every older
        glibc tag the target accepts is named too (a wheel tagged manylinux_2_17 runs on 2_28)."""
        m = _MANYLINUX.fullmatch(self.platform)
        plats = [self.platform]
        if m:
            arch = m["arch"]
            plats = [f"manylinux_2_{n}_{arch}" for n in range(int(m["minor"]), 16, -1)]
            plats.append(f"manylinux2014_{arch}")
        args = ["--only-binary=:all:", "--python-version", self.python_minor,
                "--implementation", "cp"]  # fmt: skip
        for p in plats:
            args += ["--platform", p]
        return args

    def marker_env(self) -> dict[str, str]:
        """PEP 508 environment of the target (pip evaluates markers for this host instead)."""
        machine = _MANYLINUX.fullmatch(self.platform)
        full = self.python if self.python.count(".") == 2 else f"{self.python}.0"
        return {
            "python_version": self.python_minor, "python_full_version": full,
            "implementation_name": "cpython", "implementation_version": full,
            "platform_python_implementation": "CPython",
            "platform_machine": machine["arch"] if machine else "x86_64",
            "platform_system": "Linux", "sys_platform": "linux", "os_name": "posix",
            "platform_release": "", "platform_version": "",
        }  # fmt: skip

    def has(self, name: str, version: str) -> bool:
        """The target already has this release (2.11.0 == 2.11.0+cu130: same API)."""
        have = self.installed.get(canonicalize_name(name))
        return have is not None and same_release(have, version)


def same_release(a: str, b: str) -> bool:
    """Versions equal but for the local label (+cu130 names the CUDA build, not the API)."""
    try:
        return Version(a).public == Version(b).public
    except InvalidVersion:
        return a == b


def parse_freeze(text: str, where: str) -> tuple[dict[str, str], dict[str, str]]:
    """(installed versions by canonical name, header values) of a `pip freeze` output.

    Editable and URL installs count as installed at an unknown version ("" - never equal to a
    release, so such a package is carried if something needs it).
    """
    installed: dict[str, str] = {}
    header: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        head = _HEADER.match(line)
        if head:
            header[head["key"]] = head["value"]
            continue
        if not line or line.startswith(("#", "-e ")):
            continue
        pin = _PIN.match(line)
        if pin:
            try:
                Version(pin["ver"])
            except InvalidVersion as exc:
                raise TargetError(f"{where}:{n}: {pin['ver']!r} is not a version") from exc
            installed[canonicalize_name(pin["name"])] = pin["ver"]
            continue
        url = _URL.match(line)
        if url:
            installed[canonicalize_name(url["name"])] = ""
            continue
        raise TargetError(f"{where}:{n}: not a `pip freeze` line: {line[:60]!r}")
    return installed, header


def make_target(
    python: str | None,
    platform: str | None,
    torch: str | None,
    freeze: Path | None = None,
) -> Target:
    """The target from options and/or a freeze file; options win over the freeze."""
    installed: dict[str, str] = {}
    header: dict[str, str] = {}
    if freeze is not None:
        try:
            text = freeze.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TargetError(f"{freeze}: cannot read ({exc})") from exc
        installed, header = parse_freeze(text, str(freeze))
    src = f" (or in {freeze})" if freeze else ""
    python = python or header.get("python")
    platform = platform or header.get("platform")
    torch = torch or installed.get("torch") or None
    if not python:
        raise TargetError(f"the target's Python is not known: pass --python 3.12{src}")
    if not _PYTHON.fullmatch(python):
        raise TargetError(f"--python {python!r}: expected a version like 3.12")
    if not platform:
        raise TargetError(f"the target's platform is not known: pass --platform{src}")
    if not torch:
        raise TargetError(f"the target's torch is not known: pass --torch 2.11.0+cu130{src}")
    try:
        Version(torch)
    except InvalidVersion as exc:
        raise TargetError(f"--torch {torch!r} is not a version") from exc
    if freeze is None:
        installed = {"torch": torch}
    return Target(python=python, platform=platform, torch=torch, installed=installed)


_SIZE = re.compile(r"^\s*(?P<n>\d+(\.\d+)?)\s*(?P<unit>[KMGT]i?B|B)?\s*$", re.IGNORECASE)
_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}  # fmt: skip


def parse_size(text: str) -> int:
    """'64MiB', '500MB', '1GiB' or a byte count, as bytes."""
    m = _SIZE.match(text)
    if not m:
        raise TargetError(f"{text!r} is not a size (examples: 64MiB, 500MB, 2GiB)")
    size = int(float(m["n"]) * _UNITS[(m["unit"] or "B").lower()])
    if size < 1:
        raise TargetError(f"{text!r}: a part size must be at least one byte")
    return size
