"""Checks that a crawl's report draws in a real browser: headless Chromium (Debian's package
``chromium``) opens ``report.html`` from disk, runs its scripts, and the DOM it leaves and the
console messages it printed are read back; a screenshot is taken beside the report.

Chromium is installed with apt-get when it is missing and this runs as root; where it cannot
be had the check skips, saying why (every other assertion of the calling test has passed by
then).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync")
_CHART = re.compile(r'<div class="chart[^"]*" id="chart-([a-z_]+)"([^>]*)>')


def chromium() -> str:
    """The Chromium binary, installed if missing and possible; skips the test if not."""
    if os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip("the report's browser check needs Debian's chromium (/usr/bin/chromium): "
                    "not installed, and apt-get cannot be run here (not root, or no apt-get)")
    outputs = []
    for command in (["apt-get", "install", "-y", "chromium"], ["apt-get", "update"],
                    ["apt-get", "install", "-y", "chromium"]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=900,
                              env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
                              check=False)
        outputs.append(done.stdout[-500:] + done.stderr[-500:])
        if os.access(CHROMIUM, os.X_OK):
            return CHROMIUM
    pytest.skip("the report's browser check needs Debian's chromium, and apt-get could not "
                f"install it: {outputs[-1]}")


def _run(binary: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        return subprocess.run([binary, *_FLAGS, f"--user-data-dir={profile}", *arguments],
                              capture_output=True, text=True, timeout=300, check=False,
                              stdin=subprocess.DEVNULL)


def check_report_draws(out: Path, expected_charts: set[str]) -> Path:
    """Open ``out/report.html`` in headless Chromium: no console message (the page logs none,
    so any is a script error), nothing in the page's own error box, every chart drawn (marked
    by the page once Plotly has drawn it, with an SVG and at least one trace) and at least the
    ``expected_charts``. Takes a screenshot into ``out/report.png`` and returns its path."""
    report = out / "report.html"
    assert report.is_file(), f"the crawl wrote no report: {sorted(p.name for p in out.iterdir())}"
    binary = chromium()
    url = report.resolve().as_uri()
    dumped = _run(binary, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=20000",
                  "--dump-dom", url)
    assert dumped.returncode == 0, dumped.stderr[-3000:]
    console = [line for line in dumped.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console
    dom = dumped.stdout
    errors = re.search(r'<div id="report-errors">(.*?)</div>', dom, re.S)
    assert errors is not None, "no error box in the page: did it load?"
    assert errors.group(1).strip() == "", errors.group(1)
    charts = list(_CHART.finditer(dom))
    names = [match.group(1) for match in charts]
    assert expected_charts <= set(names), (sorted(expected_charts), names)
    for match, following in zip(charts, [*charts[1:], None], strict=True):
        assert 'data-drawn="1"' in match.group(2), f"chart {match.group(1)} was not drawn"
        body = dom[match.end():following.start() if following else len(dom)]
        assert 'class="main-svg"' in body, f"chart {match.group(1)} has no SVG"
        assert re.search(r'class="(trace|bars|scatterlayer)', body), (
            f"chart {match.group(1)} drew no trace")
    screenshot = out / "report.png"
    shot = _run(binary, "--window-size=1400,2400", "--hide-scrollbars",
                "--virtual-time-budget=20000", f"--screenshot={screenshot}", url)
    assert shot.returncode == 0, shot.stderr[-3000:]
    assert screenshot.is_file()
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert screenshot.stat().st_size > 20_000, "the screenshot looks blank"
    return screenshot
