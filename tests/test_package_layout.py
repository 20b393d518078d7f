"""helpers.attention and helpers.diagrams as packages: every name still where it was, every module documented.

Both were single modules (helpers/attention.py, helpers/diagrams.py) before issue 22 split them by
topic. The names below are what they offered then: their ``__all__``, in order, and the other names
the repository reads (``diagrams.LINE_WIDTH``, ``attention._tile_rows``). Each must still be importable
from the package, as the very object its submodule defines.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import helpers.attention
import helpers.diagrams

ROOT = Path(__file__).resolve().parent.parent

# helpers/attention.py's __all__ before the split, in its order.
ATTENTION_ALL = [
    "softmax", "softmax_loop", "attention_scores", "attention_scores_loop", "scaled_dot_product_attention",
    "scaled_dot_product_attention_loop", "causal_mask", "padding_mask", "entropy", "attention_flops",
    "attention_backward", "softmax_jacobian", "split_heads", "merge_heads", "multi_head_attention",
    "MultiHeadAttention", "blockwise_attention", "sinusoidal_positions", "sinusoidal_positions_loop",
    "causal_mask_lower_right", "KVCache", "incremental_attention", "to_bfloat16", "low_precision_attention",
    "attention_dropout", "nadaraya_watson", "nadaraya_watson_loop",
]
# ... and the private name a test reads from it (tests/test_attention.py: the kernel really tiles).
ATTENTION_OTHER = ["_tile_rows"]

# helpers/diagrams.py's __all__ before the split, in its order.
DIAGRAMS_ALL = [
    "pipeline", "head_view", "vectors_2d", "soft_lookup", "projection_flow", "backward_graph", "softmax_jacobian",
    "tiled_steps",
    "flash_loop_orders", "induction_circuit", "token_circuits",
    "averaging_to_attention", "score_spread", "heads_split_merge",
    "head_patterns", "mask_and_weights", "cross_attention", "saturation", "jacobian_pile",
    "kernel_view",
]
# ... and its other public names, the pictures' constants (the tests read LINE_WIDTH and QUERY_COLOUR).
DIAGRAMS_OTHER = [
    "BACKWARD_COLOUR", "CELLS_MAX", "FILLS", "FORWARD_COLOUR", "KEY_COLOUR", "LABEL_PITCH", "LINE_WIDTH",
    "LOOKUP_HEIGHT", "LOOKUP_PITCH", "LUMINANCE", "MINUS", "NUMBERS_MAX", "QUERY_COLOUR", "QUERY_TEXT_COLOUR",
    "SLOW_FILL", "SRAM_FILLS",
]

PACKAGES = {
    "helpers.attention": (ATTENTION_ALL, ATTENTION_OTHER),
    "helpers.diagrams": (DIAGRAMS_ALL, DIAGRAMS_OTHER),
}


def _submodules(package):
    """Every module of ``package`` (imported), private ones included."""
    names = [info.name for info in pkgutil.iter_modules(package.__path__)]
    return [importlib.import_module(f"{package.__name__}.{name}") for name in names]


def _all_names():
    return [(package, name) for package, (public, other) in PACKAGES.items() for name in public + other]


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_what_it_was_in_the_same_order(package):
    assert importlib.import_module(package).__all__ == PACKAGES[package][0]


@pytest.mark.parametrize("package, name", _all_names())
def test_every_name_of_before_the_split_is_importable_from_the_package(package, name):
    namespace = {}
    exec(f"from {package} import {name}", namespace)  # the statement a notebook or a test writes
    assert namespace[name] is getattr(importlib.import_module(package), name)


@pytest.mark.parametrize("package, name", _all_names())
def test_the_package_holds_the_very_object_its_module_defines(package, name):
    module = importlib.import_module(package)
    obj = getattr(module, name)
    holders = [sub for sub in _submodules(module) if getattr(sub, name, None) is obj]
    assert holders, f"{package}.{name} is not the object of any of its modules"
    if inspect.isfunction(obj) or inspect.isclass(obj):
        home = sys.modules[obj.__module__]
        assert home in holders and obj.__module__.startswith(package + ".")
        if name in PACKAGES[package][0]:
            assert name in home.__all__, f"{obj.__module__}.__all__ lacks {name}"


@pytest.mark.parametrize("package", PACKAGES)
def test_the_modules_all_together_are_the_package_all(package):
    module = importlib.import_module(package)
    listed = [name for sub in _submodules(module) for name in getattr(sub, "__all__", [])]
    assert sorted(listed) == sorted(module.__all__)


@pytest.mark.parametrize("package", PACKAGES)
def test_each_module_opens_with_a_docstring(package):
    module = importlib.import_module(package)
    subs = _submodules(module)
    assert len(subs) >= 5
    for sub in [module, *subs]:
        doc = (sub.__doc__ or "").strip()
        assert len(doc.splitlines()[0] if doc else "") >= 30, f"{sub.__name__} has no docstring saying what it holds"


def test_the_package_docstrings_keep_the_reference():
    assert helpers.attention.__doc__.startswith("Scaled dot-product attention in NumPy.")
    assert '**True means "may attend"**' in helpers.attention.__doc__
    assert helpers.diagrams.__doc__.startswith("Pictures of the attention mechanism itself")
    for package in (helpers.attention, helpers.diagrams):  # and they name every module
        for info in pkgutil.iter_modules(package.__path__):
            assert f"    {info.name} " in package.__doc__, f"{package.__name__}'s docstring does not list {info.name}"


def test_the_usual_imports_work():
    from helpers import attention, diagrams

    cache = attention.KVCache()
    cache.append(np.ones((1, 2)), np.ones((1, 3)))
    assert cache.attend(np.ones((1, 2)))[0].shape == (1, 3)
    assert diagrams.head_view is helpers.diagrams.walkthrough.head_view
    assert callable(diagrams.pipeline) and diagrams.LINE_WIDTH == 8.0


def test_the_checks_stand_ins_reach_the_kernels_inside_the_package():
    """While a student's function runs, every binding of a kernel in helpers.attention is the recording stand-in.

    A kernel calls another by the name its own module binds (KVCache.attend calls kv_cache's
    scaled_dot_product_attention, nadaraya_watson calls smoothing's softmax), as it called the
    single module's before the split.
    """
    from helpers.checks._core import LIBRARY_KERNELS, _record_library_calls

    attention = helpers.attention
    originals = {name: getattr(attention, name) for name in LIBRARY_KERNELS}
    used = []
    restore = _record_library_calls(used)
    try:
        for module in [attention, *_submodules(attention)]:
            for name, fn in originals.items():
                assert getattr(module, name, None) is not fn, f"{module.__name__}.{name} escaped the stand-in"
        assert attention.smoothing.softmax is attention.core.softmax is attention.softmax
        assert attention.kv_cache.scaled_dot_product_attention is attention.scaled_dot_product_attention
        attention.nadaraya_watson([0.0], [0.0, 1.0], [0.0, 1.0], 0.5)
        cache = attention.KVCache()
        cache.append(np.ones((1, 2)), np.ones((1, 2)))
        cache.attend(np.ones((1, 2)))
    finally:
        restore()
    assert used.count("softmax") >= 2 and used.count("scaled_dot_product_attention") >= 2  # stand-in and profile
    for module in [attention, *_submodules(attention)]:
        for name, fn in originals.items():
            if hasattr(module, name):
                assert getattr(module, name) is fn, f"{module.__name__}.{name} was not restored"


def _load_tool(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_make_mutation_still_perturbs_both_softmax_code_paths(tmp_path):
    """tools/softmax_mutation.py finds its two lines in the package, and the copy's kernels are 1 % off."""
    tool = _load_tool("softmax_mutation")
    folder = tool.mutated_helpers(tmp_path)
    mutated = [p.name for p in (folder / "helpers" / "attention").glob("*.py") if "# mutation:" in p.read_text()]
    assert mutated == ["core.py"]
    script = (
        "import helpers, numpy as np\n"
        "from helpers.attention import softmax, scaled_dot_product_attention as sdpa\n"
        "print(helpers.__file__)\n"
        "print(*softmax([0.0, 1.0]))\n"
        "print(*sdpa([[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0], [0.0]], scale=1.0)[1][0])\n"
    )
    env = dict(os.environ, PYTHONPATH=str(folder))
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                         check=True, timeout=120).stdout.splitlines()
    assert Path(out[0]).is_relative_to(folder)
    exact = helpers.attention.softmax
    np.testing.assert_allclose([float(x) for x in out[1].split()], exact([0.0, 1.01]), rtol=1e-12)
    np.testing.assert_allclose([float(x) for x in out[2].split()], exact([1.01, 0.0]), rtol=1e-12)


def test_a_line_the_mutation_cannot_find_is_an_error(tmp_path, monkeypatch):
    tool = _load_tool("softmax_mutation")
    monkeypatch.setattr(tool, "MUTATIONS", [("        np.exp(nowhere, out=nowhere)\n", "        pass\n")])
    with pytest.raises(SystemExit, match="is not once in helpers/attention/"):
        tool.mutated_helpers(tmp_path)
