"""Helpers for "Attention, Step by Step": NumPy kernels, the documents' examples, plots and widgets.

Modules
-------
attention : the vectorized NumPy kernels (softmax, masks, scaled dot-product attention)
examples  : the documents' worked examples and printed figures, loaded from ``helpers/data/``
"""

# The version, in one place: pyproject.toml reads it, `make release` bumps it.
__version__ = "0.1.0"
