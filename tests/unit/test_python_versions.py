"""The supported Python versions are named alike wherever they are named: ``requires-python`` in
pyproject.toml, the versions .ci/fast-tier-other-pythons runs the fast tier on, ruff's target
version (the oldest) and the README; and .ci/run runs the README's test command."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _supported_by_pyproject() -> list[str]:
    # pyproject.toml is read with a pattern: tomllib came with Python 3.11.
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'^requires-python = ">=3\.(\d+),<3\.(\d+)"$', text, re.MULTILINE)
    assert found, "requires-python must read >=3.X,<3.Y"
    return [f"3.{minor}" for minor in range(int(found[1]), int(found[2]))]


def test_the_ci_runs_the_fast_tier_on_every_supported_python() -> None:
    script = (ROOT / ".ci" / "fast-tier-other-pythons").read_text(encoding="utf-8")
    listed = re.search(r'^SUPPORTED="([^"]*)"$', script, re.MULTILINE)
    assert listed, "the script names its versions in SUPPORTED=\"...\""
    assert listed[1].split() == _supported_by_pyproject()
    assert ".ci/fast-tier-other-pythons" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_ruff_checks_for_the_oldest_supported_python() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    oldest = _supported_by_pyproject()[0]
    assert f'target-version = "py{oldest.replace(".", "")}"' in text


def test_the_readme_names_the_supported_versions() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    supported = _supported_by_pyproject()
    assert f"Python {supported[0]} to {supported[-1]}" in readme


def test_the_ci_runs_the_readme_s_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"run the whole test suite\*\*.*?```sh\n(.*?)```", readme, re.DOTALL)
    assert block, "the README's test command is the sh block after its heading"
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = script.split('cd "$(dirname "$0")/.."\n', 1)[1]

    def words(text: str) -> list[str]:
        return text.replace("\\\n", " ").split()

    assert words(command) == words(block[1])
