"""``ruff check`` from the repository root, with the settings of pyproject.toml, finds nothing.

It checks helpers/, tools/, tests/, benchmarks/, instructor/, conftest.py and every notebook (notebooks/,
exercises/): the rules (pycodestyle's E and W, pyflakes' F, isort's I; 120 columns, 100 in the
notebooks) are [tool.ruff] in pyproject.toml, which notebooks/.ruff.toml and exercises/.ruff.toml
(hidden, so JupyterLab's file browser shows only the lessons) extend, and .pre-commit-config.yaml
runs the same check on each commit.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("helpers", "tools", "tests", "benchmarks", "instructor")
NOTEBOOKS = ("notebooks", "exercises", "instructor")

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


def test_ruff_checks_exactly_the_python_files_and_the_notebooks():
    result = _ruff("--show-files")
    assert result.returncode == 0, result.stderr
    shown = {Path(line.strip()).resolve() for line in result.stdout.splitlines() if line.strip()}
    shown = {path for path in shown if path.suffix in (".py", ".ipynb")}
    expected = {path.resolve() for folder in CHECKED for path in (ROOT / folder).rglob("*.py")
                if "__pycache__" not in path.parts}
    expected.add((ROOT / "conftest.py").resolve())
    expected |= {path.resolve() for folder in NOTEBOOKS for path in (ROOT / folder).rglob("*.ipynb")
                 if ".ipynb_checkpoints" not in path.parts}
    assert shown == expected, (f"not checked: {sorted(map(str, expected - shown))}; "
                               f"checked besides: {sorted(map(str, shown - expected))}")


def _stdin_findings(filename, source):
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                             "--stdin-filename", filename, "-"], input=source, cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    return result.stdout


def test_notebook_code_is_held_to_100_columns_and_package_code_to_120():
    line = "x = 1  # " + "a" * (110 - len("x = 1  # ")) + "\n"  # 110 columns
    assert "E501" in _stdin_findings("notebooks/probe.py", line)
    assert "E501" in _stdin_findings("instructor/solutions/probe.py", line)
    assert "E501" not in _stdin_findings("helpers/probe.py", line)
    assert "I001" in _stdin_findings("helpers/probe.py", "import sys\nimport os\n\nprint(os, sys)\n")


def test_the_lessons_folder_holds_no_visible_configuration():
    """JupyterLab's file browser beside the lessons shows lessons: the linter's settings are hidden files."""
    for folder in ("notebooks", "exercises/student"):
        # rise.css is the one exception: RISE's presenter asks for it beside the notebook it shows.
        visible = [p.name for p in (ROOT / folder).iterdir() if not p.name.startswith(".") and p.name != "rise.css"]
        assert all(name.endswith(".ipynb") for name in visible), f"{folder}/ shows {visible}"
    assert (ROOT / "notebooks" / ".ruff.toml").is_file() and (ROOT / "exercises" / ".ruff.toml").is_file()


def test_every_document_states_the_same_linted_folders():
    """CONTRIBUTING.md, docs/reference.md and pre-commit say what this test checks, no less."""
    for doc in ("CONTRIBUTING.md", "docs/reference.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        statement = text[text.index("`ruff check` lints" if doc == "CONTRIBUTING.md" else "`ruff check` with"):][:600]
        for folder in sorted(set(CHECKED) | set(NOTEBOOKS)):
            assert f"`{folder}/`" in statement, f"{doc}: the linting statement leaves out {folder}/"
        assert "`conftest.py`" in statement, doc
    assert "left out" not in (ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8")
