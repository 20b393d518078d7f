"""Prose and numbers agree (issue 18): every number in a notebook's markdown is computed,
is a parameter in its code, or carries a source (tools/check_prose_numbers.py)."""

import copy
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import check_prose_numbers as cpn  # noqa: E402

NOTEBOOKS = cpn.default_notebooks()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_number_in_the_prose_is_computed_or_sourced(path):
    flagged = [f for f in cpn.check_notebook(path) if not f.reason]
    assert not flagged, "numbers in the prose that no output, code or source backs:\n" + "\n".join(
        str(f) for f in flagged
    )


def _notebook(tmp_path, markdown, output="", code="x = 1", name="nb.ipynb"):
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": text}
        for text in ([markdown] if isinstance(markdown, str) else markdown)
    ]
    cells.append({
        "cell_type": "code", "metadata": {}, "execution_count": 1, "source": code,
        "outputs": [{"output_type": "stream", "name": "stdout", "text": output}],
    })
    path = tmp_path / name
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def _reasons(path):
    return [(f.text, f.reason) for f in cpn.check_notebook(path)]


def test_a_number_matches_its_output_at_the_printed_precision(tmp_path):
    path = _notebook(tmp_path, "The weight is 0.73 and the sum 2,048.", "w = 0.731059\nsum 2048\n")
    assert _reasons(path) == [("0.73", "output"), ("2,048", "output")]


def test_a_changed_output_is_flagged(tmp_path):
    path = _notebook(tmp_path, "The weight is 0.73.", "w = 0.741059\n")
    assert _reasons(path) == [("0.73", "")]


def test_percent_tex_thousands_and_scientific(tmp_path):
    path = _notebook(
        tmp_path, "It keeps 48% here, $73{,}728 > 65{,}504$, and the top is 3.39e38.",
        "0.4821\n73728 65504\n3.3895e+38\n",
    )
    assert [r for _, r in _reasons(path)] == ["output"] * 4


def test_code_parameters_sources_and_questions_pass(tmp_path):
    path = _notebook(
        tmp_path,
        [
            "We draw 512 dimensions.",
            "The A100 has 192 KB per multiprocessor (Dao et al., 2022).",
            "Hidden fact.<!-- source: a paper -->\nIt is 37.",
            "For n = 1000 tokens, how many operations?",
        ],
        "", code="d_k = 512\n",
    )
    assert _reasons(path) == [("512", "code"), ("192", "source"), ("37", "source"), ("1000", "question")]


def test_what_is_not_checked(tmp_path):
    path = _notebook(
        tmp_path,
        [
            "## 12. A heading with 345\n\n"
            "Two heads, shape (3, 4), in 2017, notebook 11, [11](11-x.ipynb), float16, W_2, $x^{64}$.",
            "## Appendix: the document, figure by figure\n\nThe document prints 107.4.",
        ],
    )
    assert _reasons(path) == []


def test_an_unbacked_number_is_flagged(tmp_path):
    path = _notebook(tmp_path, "Activations of size 20-30 are common.")
    assert [r for _, r in _reasons(path)] == ["", ""]


def test_changing_a_stored_number_of_a_real_notebook_fails_the_check(tmp_path):
    """Break a notebook on purpose: move every printed copy of one number the prose quotes."""
    source = ROOT / "notebooks" / "02-cat-sat.ipynb"
    findings = [f for f in cpn.check_notebook(source) if f.reason == "output" and f.decimals >= 2]
    assert findings, "02 should quote computed numbers"
    target = findings[0]
    nb = json.loads(source.read_text())
    broken = copy.deepcopy(nb)

    def shift(match):
        value = float(match.group(0))
        if abs(abs(value) - target.value) <= 0.5 * 10 ** -target.decimals * (1 + 1e-9):
            return f"{value + 0.1:.{max(target.decimals, 4)}f}"
        return match.group(0)

    for cell in broken["cells"]:
        for output in cell.get("outputs", []):
            if "text" in output:
                output["text"] = re.sub(r"-?\d+\.\d+", shift, "".join(output["text"]))
            for mime, data in output.get("data", {}).items():
                if mime.startswith("text/"):
                    output["data"][mime] = re.sub(r"-?\d+\.\d+", shift, "".join(data))
    path = tmp_path / source.name
    path.write_text(json.dumps(broken))
    flagged = [f for f in cpn.check_notebook(path) if not f.reason]
    assert any(f.text == target.text and f.cell == target.cell for f in flagged)
