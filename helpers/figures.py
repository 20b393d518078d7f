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

How the description travels, and why each picture is stored once: in a kernel, a
described figure is displayed as a ``text/html`` ``<img class="described-figure"
alt="..." src="data:image/png;base64,...">`` plus the usual ``text/plain``, and
nothing else: the inline backend's ``image/png`` (and any other picture format it
is set to draw) is left out for it, so a notebook stores the PNG once, inside the
``<img>``. JupyterLab 4 renders text/html before image/png and writes no alt for
an image/png output, so the ``<img>`` is what it shows, with its alt. For the
static site and the decks, tools/publish.py turns the ``<img>`` back into an
``image/png`` output whose metadata holds the alt, where their templates read it.
A figure without a description keeps the inline backend's image/png and has no
text/html, so a test can find it. tools/slim_notebooks.py brings a notebook saved
in the older form (the PNG stored twice) to this one.
"""

from __future__ import annotations

import base64
import html
import os

from . import style

__all__ = ["describe", "description", "add_panel", "show", "figure_html", "img_html", "HTML_CLASS", "register",
           "matrix_text", "number", "token_list"]

_ATTRIBUTE = "_attention_description"
# The class of the <img> that carries a described figure in a notebook's output. JupyterLab
# 4 draws an image/png output without any alt text, but renders text/html before image/png:
# so a described figure is displayed as this <img> only (no image/png beside it), and
# JupyterLab shows it with its alt. tools/publish.py turns it back into image/png with
# metadata "alt" for the site and the decks.
HTML_CLASS = "described-figure"
# The picture formats the inline backend may draw a figure in: for a described figure its
# <img> is the picture, so these draw nothing (register() wraps their printers).
PICTURE_FORMATS = ("image/png", "image/jpeg", "image/svg+xml", "application/pdf")


def describe(fig, text):
    """Attach the text description ``text`` to the matplotlib figure ``fig``; return ``fig``.

    Raises ``ValueError`` when ``text`` is empty or only white space: a figure
    without a real description is what this module exists to prevent.
    """
    text = " ".join(str(text).split())
    if not text:
        raise ValueError("a figure description must not be empty")
    setattr(fig, _ATTRIBUTE, text)
    register()  # the inline backend may have dropped the formatter since the last time
    return fig


def add_panel(fig, text):
    """Add the description of one panel of ``fig`` (a helper drew into an axes it was given).

    A figure with no description of its own is described by its panels, in the
    order they were drawn: "2 panels. 1: ...; 2: ...".
    """
    text = " ".join(str(text).split())
    if text:
        panels = getattr(fig, _ATTRIBUTE + "_panels", [])
        panels.append(text.rstrip("."))
        setattr(fig, _ATTRIBUTE + "_panels", panels)
        register()
    return fig


def description(fig):
    """The description attached to ``fig`` (by :func:`describe`, or its panels'), or ``None``."""
    own = getattr(fig, _ATTRIBUTE, None)
    if own is not None:
        return own
    panels = getattr(fig, _ATTRIBUTE + "_panels", [])
    if len(panels) == 1:
        return panels[0] + "."
    if panels:
        return f"{len(panels)} panels. " + "; ".join(f"{i}: {p}" for i, p in enumerate(panels, 1)) + "."
    return None


def number(x, digits=2):
    """A number for a description: ``0.48``, ``-3.1``, ``1.2e+04`` (never ``-0.00``)."""
    x = float(x)
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "infinity" if x > 0 else "minus infinity"
    if x != 0 and (abs(x) >= 1e4 or abs(x) < 10 ** -digits):
        return f"{x:.{digits - 1}e}"
    text = f"{x:.{digits}f}"
    return "0" + text[2:] if text.startswith("-0") and float(text) == 0 else text


def token_list(labels, limit=8):
    """``"I, am, happy"``; a long list is cut: ``"a, b, c, ..., z (26 tokens)"``."""
    labels = [str(t) for t in labels]
    if len(labels) <= limit:
        return ", ".join(labels)
    return ", ".join(labels[: limit - 2]) + ", ..., " + labels[-1] + f" ({len(labels)} tokens)"


def matrix_text(matrix, kind, row_labels=None, col_labels=None, title=None):
    """Describe a heatmap of attention weights or scores from its numbers.

    >>> matrix_text([[0.5, 0.5], [0.2, 0.8]], "weights", ["a", "b"], ["a", "b"])
    'Heatmap of attention weights, 2 queries × 2 keys (a, b); each row sums to 1; largest weight 0.80, b to b.'
    """
    import numpy as np

    m_ = np.asarray(matrix, dtype=float)
    n, m = m_.shape
    rows = list(row_labels) if row_labels is not None else [str(i) for i in range(n)]
    cols = list(col_labels) if col_labels is not None else [str(j) for j in range(m)]
    what = {"weights": "attention weights", "gradient": "a gradient"}.get(kind, "scores")
    head = f"Heatmap of {what}" + (f" ({title})" if title else "")
    if rows == cols:
        shape = f"{n} queries × {m} keys ({token_list(cols)})"
    else:
        shape = f"{n} queries ({token_list(rows)}) × {m} keys ({token_list(cols)})"
    parts = [f"{head}, {shape}"]
    finite = np.isfinite(m_)
    masked = int((~finite).sum())
    if kind == "weights":
        sums = np.nansum(np.where(finite, m_, 0.0), axis=1)
        if np.allclose(sums, 1.0, atol=1e-6):
            parts.append("each row sums to 1")
        elif np.allclose(sums[sums > 0], 1.0, atol=1e-6):
            parts.append(f"each row sums to 1 except {int((sums == 0).sum())} all-zero rows")
    if masked:
        parts.append(f"{masked} masked cell{'s' if masked != 1 else ''}")
    if finite.any():
        flat = np.where(finite, m_, -np.inf)
        i, j = np.unravel_index(int(np.argmax(flat)), m_.shape)
        low = float(np.min(np.where(finite, m_, np.inf)))
        name = {"weights": "weight", "gradient": "entry"}.get(kind, "score")
        parts.append(f"largest {name} {number(m_[i, j])}, {rows[i]} to {cols[j]}")
        if kind != "weights":
            parts.append(f"smallest {number(low)}")
    return "; ".join(parts) + "."


def figure_html(fig):
    """``<img alt=... src=data:...>`` of ``fig`` when it has a description, else None.

    The PNG is drawn as the inline backend draws it (``bbox_inches="tight"``).

    In the slide medium (helpers/style.py) the figure is first redrawn for a slide
    (:func:`style.fit_for_slide`), and the ``<img>`` carries the cap height of each of
    its texts in the PNG's pixels (``data-cap-px``), which tools/deck_report.py measures.
    ``ATTENTION_CAP_PX=1`` records them for a notebook-medium figure too (the
    notebook's stored outputs never have them).
    """
    text = description(fig)
    if text is None:
        return None
    from IPython.core.pylabtools import print_figure

    caps = layout = None
    if style.is_slide():
        style.fit_for_slide(fig)
        keep = getattr(fig, "_attention_slide_panels", None)
        if keep:  # style.slide_panels: the slide shows some of the panels, the notebook all of them
            shown = " and ".join(str(k + 1) for k in keep)
            text += f" On this slide: panel{'s' if len(keep) > 1 else ''} {shown}; the notebook shows every panel."
    if style.is_slide() or os.environ.get("ATTENTION_CAP_PX") == "1":
        caps = style.cap_heights(fig)
        layout = (len(style.overlapping_texts(fig)), style.panels(fig))
    try:
        png = print_figure(fig, "png", bbox_inches="tight")
    except ZeroDivisionError:  # constrained layout could not solve the slide's size: place the axes as drawn
        if not style.is_slide():
            raise
        fig.set_layout_engine("none")
        png = print_figure(fig, "png", bbox_inches="tight")
    if not png:  # a figure with nothing drawn: the inline backend shows nothing either
        return None
    return img_html(base64.b64encode(png).decode("ascii"), text, caps, layout)


def img_html(png_base64, text, caps=None, layout=None):
    """``<img class="described-figure" alt=text src=data:...>`` for a base64 PNG.

    ``caps``, when given, is the list of the picture's text cap heights (PNG pixels),
    written as ``data-cap-px="7.3 9.1 ..."`` after the ``src``; ``layout``, when given,
    is ``(overlaps, panels)``: how many pairs of its texts run into each other
    (:func:`style.overlapping_texts`) and how many panels it has (:func:`style.panels`),
    written as ``data-overlaps`` and ``data-panels``.

    The base64 text's slashes are written as ``&#47;`` (the browser reads them back as
    ``/``), so no run of it looks like a file path to a reader of the stored notebook.
    """
    data = str(png_base64).replace("/", "&#47;")
    extra = "" if caps is None else ' data-cap-px="' + " ".join(f"{c:g}" for c in caps) + '"'
    if layout is not None:
        extra += f' data-overlaps="{int(layout[0])}" data-panels="{int(layout[1])}"'
    return (f'<img class="{HTML_CLASS}" alt="{html.escape(str(text), quote=True)}" '
            f'src="data:image/png;base64,{data}"{extra}>')


class _UnlessDescribed:
    """The inline backend's printer of one picture format, silent for a described figure.

    A described figure's picture travels in its ``<img>`` (:func:`figure_html`); drawing
    it again as image/png would store every picture twice.
    """

    def __init__(self, printer):
        self.printer = printer

    def __call__(self, fig):
        if description(fig) is not None:
            return None
        if style.is_slide():
            style.fit_for_slide(fig)
        return self.printer(fig)


def register(shell=None):
    """Make IPython display every described figure as an ``<img>`` with its description as alt text.

    Registers :func:`figure_html` as the ``text/html`` formatter of matplotlib
    figures, and wraps the inline backend's picture formatters (:data:`PICTURE_FORMATS`)
    so that they draw nothing for a described figure: its ``<img>`` holds the one copy
    of the picture. The inline backend drops every formatter of figures when it is
    (re)configured, so pyplot is imported first, and :func:`show` and
    :func:`describe` register again. Returns False outside IPython.
    """
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return False
    from matplotlib.figure import Figure

    formatters = shell.display_formatter.formatters
    if formatters["text/html"].type_printers.get(Figure) is not figure_html:
        import matplotlib.pyplot as plt

        # pyplot loads its backend on first use, and the inline backend then drops every
        # formatter of figures: load it now, so that ours come after.
        getattr(plt, "_get_backend_mod", lambda: None)()
        formatters["text/html"].for_type(Figure, figure_html)
    for mime in PICTURE_FORMATS:
        formatter = formatters.get(mime)
        printer = None if formatter is None else formatter.type_printers.get(Figure)
        if printer is not None and not isinstance(printer, _UnlessDescribed):
            formatter.for_type(Figure, _UnlessDescribed(printer))
    return True


def show(fig, text=None):
    """Display ``fig`` now with ``text`` (or its attached description) as alternative text.

    The figure is closed afterwards, so the inline backend does not show it a
    second time at the end of the cell.
    """
    if text is not None:
        describe(fig, text)
    import matplotlib.pyplot as plt
    from IPython.display import display

    register()
    display(fig)
    plt.close(fig)


register()  # in a notebook kernel: from the first import of helpers on
