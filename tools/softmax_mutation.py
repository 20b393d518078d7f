"""Does nbval notice a wrong softmax? Perturb it by 1 % and re-run every notebook.

    python tools/softmax_mutation.py              every numbered notebook but the index
    python tools/softmax_mutation.py 08 12        only those

A copy of ``helpers`` is made in a temporary folder with both softmax code paths
of ``helpers/attention/`` (``softmax`` and the in-place one inside
``scaled_dot_product_attention``, both in ``core.py``) multiplying the shifted
logits by 1.01, and
nbval re-runs each notebook with that copy first on ``PYTHONPATH`` (the kernels
inherit it). A notebook whose stored outputs all still match has no check that
depends on the softmax being right: the script lists it and exits 1.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (the exact line in helpers/attention/, what goes before it): both softmax code paths
MUTATIONS = [
    ("        np.exp(e, out=e)\n", "        e *= 1.01  # mutation: logits 1 % off\n"),
    ("        np.exp(w, out=w)\n", "        w *= 1.01  # mutation: logits 1 % off\n"),
]


def mutated_helpers(folder: Path) -> Path:
    """A copy of helpers/ in ``folder`` whose softmax is 1 % off; raises if a code path moved.

    Each mutated line must occur exactly once in the modules of helpers/attention/,
    whichever module holds it.
    """
    shutil.copytree(ROOT / "helpers", folder / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    texts = {path: path.read_text() for path in sorted((folder / "helpers" / "attention").glob("*.py"))}
    for line, before in MUTATIONS:
        holders = [path for path, text in texts.items() if line in text]
        if len(holders) != 1 or texts[holders[0]].count(line) != 1:
            raise SystemExit(f"softmax_mutation: {line.strip()!r} is not once in helpers/attention/")
        texts[holders[0]] = texts[holders[0]].replace(line, before + line)
    for path, text in texts.items():
        path.write_text(text)
    return folder


def run(notebook: Path, pythonpath: Path) -> tuple[int, int]:
    """(failed, passed) cells of ``notebook`` under nbval with the mutated helpers."""
    env = dict(os.environ, PYTHONPATH=str(pythonpath), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(notebook)],
                            cwd=ROOT, env=env, capture_output=True, text=True)
    last = (result.stdout.strip().splitlines() or [""])[-1]
    count = lambda word: int(m.group(1)) if (m := re.search(rf"(\d+) {word}", last)) else 0  # noqa: E731
    return count("failed") + count("error"), count("passed")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="notebook name prefixes, e.g. 08 12")
    args = parser.parse_args(argv)
    notebooks = [p for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
                 if not p.name.startswith("00-") and (not args.only or p.name.startswith(tuple(args.only)))]
    unnoticed = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = mutated_helpers(Path(tmp))
        print(f"{'notebook':<42} {'cells failed':>12} {'passed':>7}")
        for notebook in notebooks:
            failed, passed = run(notebook, folder)
            print(f"{notebook.stem:<42} {failed:>12} {passed:>7}", flush=True)
            if not failed:
                unnoticed.append(notebook.stem)
    if unnoticed:
        print("a 1 % wrong softmax goes unnoticed in: " + ", ".join(unnoticed))
        return 1
    print(f"a 1 % wrong softmax fails nbval in every one of the {len(notebooks)} notebooks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
