"""What a learner gets from `pip install`: the wheel carries the data, and it runs outside the repository.

The wheel is built from a copy of the source tree (so nothing stale in this
checkout's build/ can slip into it). The slow test installs it into a fresh
venv, as `pip install git+...` or Colab would, and from an empty folder lists
and loads the examples, builds the explorer and runs a walkthrough copied
there alone, in a kernel of that venv.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "helpers"
WALKTHROUGH = ROOT / "notebooks" / "02-cat-sat.ipynb"
MAX_RUNTIME_PACKAGES = 45  # issue 11: from 103 with the old dependencies
IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "build", "*.egg-info", "__pycache__", ".hypothesis", ".pytest_cache", "test-artifacts",
    ".ipynb_checkpoints",
)


def _package_files() -> set[str]:
    """Every file of the helpers package as a path inside the wheel, e.g. 'helpers/data/cat_sat.json'."""
    return {
        p.relative_to(ROOT).as_posix()
        for p in PACKAGE.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """(path of the wheel, what the build printed)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=IGNORE, symlinks=True)
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(tmp / "dist"), str(source)],
        capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (path,) = (tmp / "dist").glob("attention_step_by_step-*.whl")
    return path, out.stdout + out.stderr


def test_the_wheel_holds_every_module_and_every_data_file(wheel):
    path, _ = wheel
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        in_package = {n for n in names if n.startswith("helpers/")}
        assert in_package == _package_files()
        jsons = sorted(n for n in names if n.startswith("helpers/data/") and n.endswith(".json"))
        assert jsons == sorted(f"helpers/data/{p.name}" for p in (PACKAGE / "data").glob("*.json"))
        assert len(jsons) >= 12
        for name in jsons:  # each one whole
            assert json.loads(zf.read(name))["name"] == Path(name).stem
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert re.search(r"^License-Expression: MIT AND CC-BY-4\.0$", metadata, re.MULTILINE)  # see LICENSE
    print(f"\nwheel {path.name}: {path.stat().st_size / 1024:.0f} KiB, {len(jsons)} JSON files")


def test_building_the_wheel_warns_about_nothing(wheel):
    _, log = wheel
    # pip's own "WARNING: ..." lines are about this machine's index settings, not the project
    warnings = [line for line in log.splitlines() if "Warning" in line and not line.lstrip().startswith("WARNING:")]
    assert not warnings, "\n".join(warnings)


def _venv_packages(python: Path) -> set[str]:
    out = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"],
                         capture_output=True, text=True, check=True)
    return {line.split("==")[0].lower() for line in out.stdout.splitlines() if "==" in line}


LEARNER_SCRIPT = """
import warnings
warnings.simplefilter("error")
from pathlib import Path
import helpers
from helpers.examples import list_examples, load_example
from helpers.widgets import AttentionExplorer

assert "site-packages" in Path(helpers.__file__).parts, helpers.__file__
names = list_examples(runnable_only=False)
print(len(names), "examples;", len(list_examples()), "runnable")
for name in names:
    assert load_example(name).name == name
explorer = AttentionExplorer("i_am_happy")
print(type(explorer.widget).__name__)
"""


@pytest.mark.slow
def test_a_wheel_installed_in_a_fresh_venv_runs_a_walkthrough_from_an_empty_folder(wheel, tmp_path, monkeypatch):
    from nbclient import NotebookClient

    path, _ = wheel
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    before = _venv_packages(python)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(path)], check=True, timeout=900)
    installed = _venv_packages(python) - before
    seconds = time.perf_counter() - start
    assert "attention-step-by-step" in installed
    runtime = installed - {"attention-step-by-step"}
    assert len(runtime) <= MAX_RUNTIME_PACKAGES, sorted(runtime)
    assert not runtime & {"jupyterlab", "nbconvert", "threadpoolctl", "pytest"}, "extras leaked into the runtime"

    folder = tmp_path / "learner"  # empty: no repository around
    folder.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLBACKEND="Agg")
    out = subprocess.run([str(python), "-c", LEARNER_SCRIPT], cwd=folder, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split("\n")[1] == "VBox"
    assert int(out.stdout.split()[0]) == len(list((PACKAGE / "data").glob("*.json")))

    # The walkthrough, alone in the folder, in a kernel of the fresh venv.
    notebook = folder / WALKTHROUGH.name
    shutil.copy(WALKTHROUGH, notebook)
    kernels = tmp_path / "share" / "kernels" / "learner"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "learner", "language": "python",
        "env": {k: env[k] for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")},
    }))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "share"))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    stored = nbformat.read(notebook, as_version=4)
    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(nb, kernel_name="learner", timeout=600, resources={"metadata": {"path": str(folder)}}).execute()
    assert sorted(p.name for p in folder.iterdir()) == [WALKTHROUGH.name]  # it wrote nothing beside it
    for old, new in zip(stored.cells, nb.cells):
        if old.cell_type != "code" or "nbval-ignore-output" in old.metadata.get("tags", []):
            continue
        # what the cell printed, per stream (a kernel may split one print over several outputs)
        streams = [
            {name: "".join(o.text for o in c.outputs if o.output_type == "stream" and o.name == name)
             for name in ("stdout", "stderr")}
            for c in (old, new)
        ]
        assert streams[0] == streams[1], f"{old.source[:80]!r} printed something else outside the repository"
        assert not any(o.output_type == "error" for o in new.outputs)
    print(f"\nfresh venv + pip install <wheel>: {seconds:.0f} s, {len(runtime)} runtime packages: {sorted(runtime)}")
