"""Text descriptions for figures: every picture says in words what it shows.

A screen-reader user, a reader of the static site with images off, and a
search engine all get a figure's description instead of the picture. The
description is made from the figure's data (its shape, labels and key numbers),
so it is as true as the picture.

    fig = plots.heatmap(weights, tokens, tokens)     # helpers describe their own figures
    figures.description(fig)
    'Heatmap of attention weights, 3 queries × 3 keys (I, am, happy); ...'

    fig, ax = plt.subplots()                          # plain matplotlib in a notebook
    ax.plot(steps, loss)
    figures.show(fig, f"Loss curve over {len(steps)} steps: ...")

``describe(fig, text)`` attaches a description; ``description(fig)`` reads it;
``show(fig, text)`` attaches it and displays the figure now, with the text as
the image's alternative text (in JupyterLab, on the static site and in the decks).
"""

from __future__ import annotations

__all__ = ["describe", "description", "show"]

_ATTRIBUTE = "_attention_description"


def describe(fig, text):
    """Attach the text description ``text`` to the matplotlib figure ``fig``; return ``fig``.

    Raises ``ValueError`` when ``text`` is empty or only white space: a figure
    without a real description is what this module exists to prevent.
    """
    text = " ".join(str(text).split())
    if not text:
        raise ValueError("a figure description must not be empty")
    setattr(fig, _ATTRIBUTE, text)
    return fig


def description(fig):
    """The description attached to ``fig`` by :func:`describe`, or ``None``."""
    return getattr(fig, _ATTRIBUTE, None)


def show(fig, text=None):
    """Display ``fig`` now with ``text`` (or its attached description) as alternative text.

    The figure is closed afterwards, so the inline backend does not show it a
    second time at the end of the cell.
    """
    if text is not None:
        describe(fig, text)
    import matplotlib.pyplot as plt
    from IPython.display import display

    display(fig)
    plt.close(fig)
