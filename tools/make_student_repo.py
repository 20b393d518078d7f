"""Write the public student repository: the files this one lists as public, and nothing else.

    python tools/make_student_repo.py [OUT]        (default: build/student-repo; `make student-repo`)

A graded course keeps two repositories (docs/teaching.md, "Which files go where"): this
one, private, for the instructor, and a public one that students, Binder, Colab and the
hub's nbgitpuller link see. This script writes the public one from the files git tracks
here (a clean checkout: nothing untracked or ignored is copied). It works by allow-list:
:data:`SHIPPED` names what goes out (folders and files), :data:`SHIPPED_TESTS` the tests
that go with it; anything else, a new file included, stays here until it is added. Left out,
among others: ``instructor/`` (solutions, points, hidden tests, exam answers), the grading
tools, the tests of the checks and of the homework (they compute the answers), the lecturer's
class page (docs/classroom.md) and its sizing benchmark.

The files that go out are copied as they are, but three, which are rewritten so that they
name nothing left out (:func:`student_text`): the Makefile loses its grading targets (and
``make test`` its nbgrader venv), docs/reference.md their rows, and every Markdown link to a
file left out becomes its plain text.

It refuses to write when a notebook that goes out still holds a worked answer (a code cell
tagged ``solution`` with code in it). The output folder is replaced.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "build" / "student-repo"
INSTRUCTOR = "instructor/"

SHIPPED = (
    # top-level files
    ".gitattributes", ".gitignore", ".pre-commit-config.yaml", "CHANGELOG.md", "CITATION.cff", "CONTRIBUTING.md",
    "LICENSE", "Makefile", "README.md", "conftest.py", "environment.yml", "pyproject.toml",
    # folders, whole
    "binder/", "data/", "helpers/", "notebooks/", "web/", "exercises/student/", "docs/images/",
    ".github/ISSUE_TEMPLATE/",
    # single files in folders that are not shipped whole
    "exercises/README.md", "exercises/.ruff.toml",
    "docs/accessibility.md", "docs/glossary.md", "docs/reference.md", "docs/sources.md", "docs/teaching.md",
    "docs/upstream.md",
    "benchmarks/README.md", "benchmarks/bench_attention.py", "benchmarks/bench_blockwise.py",
    "benchmarks/bench_induction_seeds.py", "benchmarks/bench_threads.py", "benchmarks/bench_transformer.py",
    "benchmarks/bench_widgets.py", "benchmarks/bench_setup.py",
    "tools/rise/", "tools/site/", "tools/ci/", "tools/check_prose_numbers.py", "tools/deck_report.py",
    "tools/floors.py", "tools/clean_notebook.py", "tools/jupyter_server_config.py", "tools/lab/", "tools/answers.py",
    "tools/lesson_timings.py", "tools/make_student_notebooks.py", "tools/navigation.py", "tools/publish.py",
    "tools/release.py", "tools/run_notebooks.py", "tools/slide_metadata.py", "tools/slim_notebooks.py",
    "tools/softmax_mutation.py", "tools/web_assets.py",
)
"""What the student repository holds besides its tests: a path ending in ``/`` is a folder, whole."""

SHIPPED_TESTS = (
    "browser_support.py", "test_ablations.py", "test_accessibility.py", "test_attention.py", "test_beyond.py",
    "test_browser.py", "test_deck_report.py", "test_diagrams.py", "test_diagrams_backward.py",
    "test_diagrams_bridge.py", "test_diagrams_circuit.py", "test_diagrams_heads.py",
    "test_diagrams_kernel_view.py", "test_diagrams_masks.py", "test_diagrams_projections.py",
    "test_diagrams_tiles.py", "test_diagrams_why_scale.py", "test_docs.py", "test_environment.py",
    "test_examples.py", "test_explorer_input.py", "test_figures.py", "test_glossary_order.py", "test_install.py",
    "test_kernel_edges.py", "test_lab_links.py", "test_lesson_sources.py", "test_notebooks.py",
    "test_package_layout.py", "test_plots.py", "test_properties.py", "test_prose_numbers.py",
    "test_release.py", "test_repository.py", "test_rise.py", "test_stored_explorers.py", "test_topics.py",
    "test_transformer.py", "test_widgets.py", "nbval_sanitize.cfg",
)
"""The tests that go out (in ``tests/``): those that hold no answer and need nothing left out.

Not among them: the tests of the checks and of the homework (test_checks*.py,
test_homework_not_in_lectures*.py: they compute every answer), of the exercises' solutions
(test_exercises.py, test_colab.py), of grading (test_nbgrader.py, test_classroom.py,
test_student_repo.py), and those that read instructor/ (test_lint.py, test_publish.py,
test_notebook_storage.py)."""

GRADING_TARGETS = ("student-repo", "nbgrader", "grade-venv", "classroom-test")
"""Make targets for files left out: not in the student Makefile, nor in its docs/reference.md."""


def tracked_files(root: Path = ROOT) -> list[str]:
    """The files git tracks, as paths relative to ``root``."""
    out = subprocess.run(["git", "ls-files", "-z"], cwd=root, check=True, capture_output=True).stdout
    return sorted(p for p in out.decode("utf-8").split("\0") if p)


def shipped(path: str) -> bool:
    """True for a file the student repository holds."""
    if path.startswith("tests/"):
        return path.removeprefix("tests/") in SHIPPED_TESTS
    return any(path == s or (s.endswith("/") and path.startswith(s)) for s in SHIPPED)


def instructor_only(path: str, root: Path = ROOT) -> bool:
    """True for a file the student repository leaves out (everything :func:`shipped` does not name)."""
    return not shipped(path)


def worked_answers(path: Path) -> list[str]:
    """Ids of the cells of a notebook that hold a worked answer (tag ``solution``, with code)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [cell.get("id", "?") for cell in nb.get("cells", [])
            if "solution" in cell.get("metadata", {}).get("tags", []) and "".join(cell.get("source", "")).strip()
            and cell.get("cell_type") == "code"]


def _student_makefile(text: str) -> str:
    """The Makefile without its grading sections, targets, help lines and prerequisites."""
    out, skipping = [], False
    for line in text.splitlines(keepends=True):
        if line.startswith("# --- "):
            skipping = "homework grading" in line or "a class on JupyterHub" in line
        if skipping:
            continue
        if line.startswith(".PHONY:"):
            names = [n for n in line.split()[1:] if n not in GRADING_TARGETS]
            line = ".PHONY: " + " ".join(names) + "\n"
        if re.match(r"\t@echo \"make (%s)\b" % "|".join(map(re.escape, GRADING_TARGETS)), line):
            continue
        if line.startswith("\t") and ("instructor/" in line or "make_student_notebooks.py" in line):
            continue    # `make notebooks` re-runs the solutions and rewrites the student copies from them
        if line.startswith("test:"):
            line = line.replace(" $(GRADE_STAMP)", "")
        out.append(line)
    return "".join(out)


_LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s#]+)(#[^)\s]*)?\)")


def _unlinked(text: str, here: str, kept: set[str]) -> str:
    """Markdown ``text`` (of the file ``here``) with each relative link to a file not in ``kept`` made plain text."""
    folder = Path(here).parent

    def plain(match):
        target = match.group(2)
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            return match.group(0)
        resolved = Path(*(p for p in (folder / target).parts)).as_posix()
        parts = []
        for part in resolved.split("/"):
            if part == "..":
                parts = parts[:-1]
            elif part not in ("", "."):
                parts.append(part)
        path = "/".join(parts)
        if path in kept or any(k.startswith(path.rstrip("/") + "/") for k in kept):
            return match.group(0)
        return match.group(1)

    return _LINK.sub(plain, text)


def student_text(path: str, text: str, kept: set[str]) -> str:
    """The text of ``path`` as the student repository holds it."""
    if path == "Makefile":
        return _student_makefile(text)
    if path == "docs/reference.md":
        rows = tuple(f"| `make {t}`" for t in GRADING_TARGETS)
        text = "".join(line for line in text.splitlines(keepends=True) if not line.startswith(rows))
    if path.endswith(".md"):
        text = _unlinked(text, path, kept)
    return text


def make(out: Path = DEFAULT_OUT, root: Path = ROOT) -> tuple[list[str], list[str]]:
    """Write the student repository into ``out``; return (files written, files left out)."""
    kept, left = [], []
    for path in tracked_files(root):
        (kept if shipped(path) else left).append(path)
    leaks = [f"{p}: {', '.join(cells)}" for p in kept if p.endswith(".ipynb")
             for cells in [worked_answers(root / p)] if cells]
    if leaks:
        raise SystemExit("make_student_repo: worked answers in notebooks left in:\n  " + "\n  ".join(leaks))
    if out.exists():
        shutil.rmtree(out)
    names = set(kept)
    for path in kept:
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if path == "Makefile" or path.endswith(".md"):
            text = (root / path).read_text(encoding="utf-8")
            target.write_text(student_text(path, text, names), encoding="utf-8")
            shutil.copymode(root / path, target)
        else:
            shutil.copy2(root / path, target)
    return kept, left


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    kept, left = make(args.out)
    print(f"make_student_repo: {len(kept)} files into {args.out}; left out {len(left)}:")
    folders = sorted({p.split("/")[0] + "/" if p.startswith(INSTRUCTOR) else p for p in left})
    print("  " + "\n  ".join(folders))
    return 0


if __name__ == "__main__":
    sys.exit(main())
