"""The plain-logic packages never import pyflink (they are testable without Flink)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import crawl
import drum
import synthweb


def test_plain_packages_do_not_import_pyflink() -> None:
    modules = [
        f"{package.__name__}.{info.name}"
        for package in (crawl, drum, synthweb)
        for info in pkgutil.iter_modules(package.__path__)
        if info.name != "__main__"
    ]
    assert "crawl.scheduler" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "leaked = sorted(m for m in sys.modules if m == 'pyflink' or m.startswith('pyflink.'))\n"
        "print(','.join(leaked))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == ""
