"""report.html in a real browser: Debian's chromium, headless, from disk, with no network.

`make test` installs chromium when it is missing; without it these tests are skipped with a
message saying so. The screenshot must not be blank, the charts must be SVG in the DOM, and the
page's few lines of JS must open a collapsed case when its #anchor is the URL fragment.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from tests.report_helpers import scripted_run

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not installed (make test installs it)"
)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("browser")
    return scripted_run(base / "out", base / "cache") / "report.html"


def _chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--user-data-dir={tmp / 'profile'}",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)


def test_screenshot_is_not_blank(report: Path, tmp_path: Path) -> None:
    png = tmp_path / "shot.png"
    proc = _chromium(tmp_path, "--window-size=1280,2400", f"--screenshot={png}", report.as_uri())
    assert png.is_file(), proc.stderr[-2000:]
    pixels = imread(png)[..., :3]
    assert pixels.shape[:2] == (2400, 1280)
    grey = pixels.mean(axis=2)
    assert grey.std() > 0.05  # text, tables and charts, not a flat page
    assert (grey < 0.5).mean() > 0.01  # a fair amount of dark ink (text, bars)
    colourful = np.abs(pixels - pixels.mean(axis=2, keepdims=True)).max(axis=2) > 0.15
    assert colourful.mean() > 0.002  # coloured badges and chart bars rendered


def test_dom_has_the_charts_and_every_section(report: Path, tmp_path: Path) -> None:
    proc = _chromium(tmp_path, "--dump-dom", report.as_uri())
    dom = proc.stdout
    assert dom.count("<svg") >= 6, proc.stderr[-2000:]
    assert len(re.findall(r"<rect|<path", dom)) > 100  # the SVGs hold drawn shapes
    for sid in ("run", "cost", "nodes", "metrics", "redteam", "agreement", "compare", "cases"):
        assert f'<section id="{sid}">' in dom


def test_anchor_opens_a_collapsed_case(report: Path, tmp_path: Path) -> None:
    html = report.read_text(encoding="utf-8")
    closed = re.findall(r'<details class="case \w+" id="([^"]+)">', html)  # no `open` attribute
    assert closed
    target = closed[-1]
    proc = _chromium(tmp_path, "--dump-dom", f"{report.as_uri()}#{target}")
    tag = re.search(rf'<details class="case \w+" id="{re.escape(target)}"[^>]*>', proc.stdout)
    assert tag is not None and "open" in tag.group(0)
