"""A benchmark's scratch folder that does not outlive the benchmark.

The runs a benchmark drives write derived weights into their cache folder (the demo judge's
dequantised GGUF is about 0.8 GB), so a temporary folder left behind fills a disk in a few runs.
A folder the user names (--workdir, --cache-dir) is theirs and stays.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path


def scratch_dir(prefix: str) -> Path:
    """A new temporary folder, removed with everything in it when the interpreter exits
    (normally or by SystemExit or an uncaught exception; a killed process leaves it)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path
