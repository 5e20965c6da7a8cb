"""Which vLLM release runs on the target's torch: vLLM pins torch exactly.

A vLLM whose pin differs from the target's torch would pull a second multi-GB torch onto the
target, so the choice follows the pin. The table is a shortcut for the releases known here;
the pin of the wheel actually downloaded is read again from its own METADATA
(`check_vllm_wheel`), so a wrong table row cannot produce a bundle that installs another torch.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Mapping
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from nexagauge_local.bundle.target import same_release

# vLLM release -> the torch its wheel pins (`Requires-Dist: torch==X` in the METADATA of each
# release's manylinux x86-64 wheel on PyPI, read with `pip download vllm==V --no-deps`). Add a
# row when vLLM publishes a release; `--vllm VERSION` uses one not listed here.
VLLM_TORCH: dict[str, str] = {
    "0.33.0": "2.14.0",
    "0.32.0": "2.13.0",
    "0.27.0": "2.13.0",
    "0.26.0": "2.11.0",
}


class NoFittingVllm(LookupError):
    """No vLLM release in the table pins the target's torch."""


def pick_vllm(torch: str, table: Mapping[str, str] = VLLM_TORCH) -> str:
    """The newest vLLM release whose torch pin is the target's torch release."""
    fits = [v for v, pin in table.items() if same_release(pin, torch)]
    if fits:
        return max(fits, key=Version)
    known = ", ".join(sorted({p for p in table.values()}, key=Version))
    raise NoFittingVllm(
        f"no known vLLM release pins torch {torch} (known pins: {known}); install one of those "
        f"torch releases on the target, or pass --vllm VERSION for a release not listed"
    )


def wheel_requires(path: Path) -> tuple[str, str, list[str]]:
    """(name, version, Requires-Dist) from a wheel's own `*.dist-info/METADATA`."""
    with zipfile.ZipFile(path) as zf:
        meta = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1]
        if not meta:
            raise ValueError(f"{path.name}: no .dist-info/METADATA inside")
        msg = Parser().parsestr(zf.read(meta[0]).decode("utf-8"))
    return msg["Name"], msg["Version"], list(msg.get_all("Requires-Dist") or [])


def torch_pin(requires: Iterable[str], env: Mapping[str, str]) -> str | None:
    """The exact torch version a distribution pins for ENV (`torch==X`), else None."""
    for line in requires:
        req = Requirement(line)
        if canonicalize_name(req.name) != "torch":
            continue
        if req.marker is not None and not req.marker.evaluate({**env, "extra": ""}):
            continue
        pins = [s.version for s in req.specifier if s.operator in ("==", "===")]
        return pins[0] if pins else None
    return None


def check_vllm_wheel(path: Path, torch: str, env: Mapping[str, str]) -> str:
    """The downloaded vLLM wheel's torch pin, which must be the target's torch release."""
    _, version, requires = wheel_requires(path)
    pin = torch_pin(requires, env)
    if pin is None or not same_release(pin, torch):
        raise NoFittingVllm(
            f"{path.name}: vLLM {version} pins torch {pin or '(none)'}, the target has {torch}"
        )
    return pin
