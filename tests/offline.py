"""Run a command with no network: a network namespace when the kernel allows it, otherwise a
sitecustomize that makes every socket connection fail. Either way, code that tries to download
at run time fails the test, as it would in an air-gapped site."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

_BLOCKER = """
import socket
def _blocked(*a, **k):
    raise OSError("network access blocked by the offline test harness")
socket.socket.connect = _blocked
socket.socket.connect_ex = _blocked
socket.create_connection = _blocked
"""


@lru_cache(maxsize=1)
def netns_available() -> bool:
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    return subprocess.run([unshare, "-rn", "true"], capture_output=True, check=False).returncode == 0


def run_offline(args: list[str], tmp: Path, **kw) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, **kw.pop("env", {}))
    env.pop("HF_HUB_OFFLINE", None)  # the tool must switch the hub off by itself
    cmd = [sys.executable, "-m", "nexagauge_local", *args]
    if netns_available():
        cmd = ["unshare", "-rn", *cmd]
    else:
        site = tmp / "offline_site"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(_BLOCKER)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    return subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, **kw)
