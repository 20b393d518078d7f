"""``ruff check`` from the repository root, with the settings of pyproject.toml, finds nothing.

It checks helpers/, tools/, tests/, benchmarks/ and conftest.py: the rules (pycodestyle's E and W,
pyflakes' F, 120 columns) and the paths are [tool.ruff] in pyproject.toml, and
.pre-commit-config.yaml runs the same check on each commit.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("helpers", "tools", "tests", "benchmarks")

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ruff") is None,
    reason="ruff is not installed: it is in the test extra (pip install -e '.[test]')",
)


def _ruff(*args):
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_ruff_finds_nothing():
    result = _ruff("--output-format", "concise")
    assert result.returncode == 0, f"ruff check found:\n{result.stdout}{result.stderr}"


def test_ruff_checks_exactly_the_python_files_of_helpers_tools_tests_and_benchmarks():
    result = _ruff("--show-files")
    assert result.returncode == 0, result.stderr
    shown = {Path(line.strip()).resolve() for line in result.stdout.splitlines() if line.strip()}
    shown = {path for path in shown if path.suffix in (".py", ".ipynb")}
    expected = {path.resolve() for folder in CHECKED for path in (ROOT / folder).rglob("*.py")
                if "__pycache__" not in path.parts}
    expected.add((ROOT / "conftest.py").resolve())
    assert shown == expected, (f"not checked: {sorted(map(str, expected - shown))}; "
                               f"checked besides: {sorted(map(str, shown - expected))}")
