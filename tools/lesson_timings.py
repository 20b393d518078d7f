"""Slide counts of the walkthroughs, from their slide metadata, for the lesson plan.

    python tools/lesson_timings.py

For each ``notebooks/NN-*.ipynb``: the number of slides a deck shows (cells whose
slide type is "slide" or "subslide"), the fragments (clicks within a slide) and the
words of prose. docs/teaching.md's per-lecture minutes were planned against these
numbers; re-run it after the decks change and adjust the "skip when short of time"
lists.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def counts(path: Path) -> dict[str, int]:
    """``{"slides", "fragments", "words"}`` of one notebook."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    kinds = Counter((c.get("metadata", {}).get("slideshow") or {}).get("slide_type", "-") for c in nb["cells"])
    words = sum(len("".join(c["source"]).split()) for c in nb["cells"] if c["cell_type"] == "markdown")
    return {"slides": kinds["slide"] + kinds["subslide"], "fragments": kinds["fragment"], "words": words}


def main() -> int:
    print(f"{'notebook':45} {'slides':>6} {'fragments':>9} {'words':>6}")
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        c = counts(path)
        print(f"{path.stem:45} {c['slides']:6d} {c['fragments']:9d} {c['words']:6d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
