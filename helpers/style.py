"""Which medium the figures are drawn for: the notebook page or the lecture slide.

One figure, two media. Every helper and every notebook draws its figure once, for
the notebook page (what the stored notebooks hold and nbval checks). When the
figure is displayed in the *slide* medium, :func:`fit_for_slide` redraws the same
figure, from the same artists, for a projected slide: its canvas at most the slide's
picture area (16:9, 880 x 495 px; the deck grows it into the room its slide leaves),
and every text in it (titles, axis labels, tick labels,
numbers in cells) at least :data:`SLIDE_MIN_PT` points, so that its cap height is
about 13 px on a 1280 x 720 screen. No second copy of a figure's code exists.

    ATTENTION_MEDIUM=slide jupyter nbconvert ...   # the environment chooses (make slides sets it)
    with style.medium("slide"):                     # or a block of code
        figures.show(fig, "...")
    style.current()                                 # "notebook" or "slide"

The sizes live here, in one place, for both media:

- the notebook medium leaves a figure exactly as its code drew it (font sizes in
  points at the figure's dpi: "unscaled");
- the slide medium scales: a text of size ``s`` points becomes
  ``SLIDE_MIN_PT + (s - smallest)`` points, so the smallest text of the figure
  reaches the floor and the differences between sizes (a title above its ticks)
  stay; no text grows past :data:`SLIDE_MAX_PT`.

On a slide no two texts of a picture may run into each other (issue 32): the fit hides
crowded cell numbers, grows a canvas whose texts still collide, then makes tick labels
smaller, upright and fewer and wraps long titles; :func:`overlapping_texts` lists what
still collides. A figure of more than two panels says which two a slide shows with
:func:`slide_panels`; the notebook keeps them all.

How a picture's text is measured: :func:`cap_heights` lists the cap height, in the
PNG's own pixels, of every visible text of a figure (font size x dpi / 72 x the
font's cap-height ratio). helpers/figures.py writes the list into the ``<img>`` of
a figure drawn in the slide medium (``data-cap-px``), and tools/deck_report.py
multiplies it by the scale at which the deck shows the picture on a 1280 x 720
screen.
"""

from __future__ import annotations

import contextlib
import os

__all__ = ["MEDIA", "current", "medium", "is_slide", "fit_for_slide", "drop_crowded_values", "CELL_VALUE",
           "cap_heights", "overlapping_texts", "panels", "slide_panels", "SLIDE_SIZE_IN", "SLIDE_TICK_FLOOR_PT",
           "SLIDE_DPI", "SLIDE_MIN_PT", "SLIDE_MAX_PT", "CAP_RATIO", "ENVIRONMENT"]

MEDIA = ("notebook", "slide")
ENVIRONMENT = "ATTENTION_MEDIUM"
# The slide's picture area: reveal.js draws the decks at 1100 x 760; a slide with a heading and a
# line of prose leaves about 880 x 500 px for its picture. A 16:9 picture of 880 x 495 px is
# 8.8 x 4.95 in at 100 dpi; where a slide leaves more room the deck grows it (never shrinks it
# below its own size unless the slide would overflow: web/templates/slides).
SLIDE_DPI = 100
SLIDE_SIZE_IN = (8.8, 4.95)
# A 1100 x 760 deck on a 1280 x 720 screen is scaled by 720 / 760 = 0.947: a text of 14 pt at
# 100 dpi is 19.4 px, its cap height (DejaVu Sans: 0.73 em) 14.2 px in the PNG, 13.4 px on screen.
SLIDE_MIN_PT = 14.0
SLIDE_MAX_PT = 22.0
# The gid of a number written in a matrix cell (plots.heatmap): on a slide, crowded ones are hidden.
CELL_VALUE = "cell-value"
CELL_VALUE_PREFIX = "value:"  # a diagram's numbers in the cells of a matrix: gid "value:<matrix>:<i>:<j>"
CAP_RATIO = 0.73  # DejaVu Sans, matplotlib's default face: cap height / font size

_override: list[str] = []


def current() -> str:
    """The medium figures are drawn for now: ``"notebook"`` (the default) or ``"slide"``.

    A :func:`medium` block wins; else the environment variable ``ATTENTION_MEDIUM``.
    Raises ``ValueError`` for a medium that is neither.
    """
    name = _override[-1] if _override else os.environ.get(ENVIRONMENT, "notebook").strip().lower() or "notebook"
    if name not in MEDIA:
        raise ValueError(f"{ENVIRONMENT} must be one of {', '.join(MEDIA)}, not {name!r}")
    return name


def is_slide() -> bool:
    return current() == "slide"


@contextlib.contextmanager
def medium(name: str):
    """Draw for the medium ``name`` ("notebook" or "slide") inside the block."""
    if name not in MEDIA:
        raise ValueError(f"the medium must be one of {', '.join(MEDIA)}, not {name!r}")
    _override.append(name)
    try:
        yield name
    finally:
        _override.pop()


def _texts(fig):
    """Every visible text artist of ``fig`` with something written in it."""
    from matplotlib.text import Text

    found = []
    for text in fig.findobj(Text):
        if not text.get_visible() or not text.get_text().strip():
            continue
        axes = text.axes
        if axes is not None and not axes.get_visible():
            continue
        found.append(text)
    return found


def _tick_labels(fig):
    """Tick labels as drawn (the ticks are made at draw time, so the figure is drawn first)."""
    labels = []
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:  # an axes drawn with axis("off") draws no tick label
            continue
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            span = (high - low) * 1e-9
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                at = tick.get_loc()
                if at is not None and not low - span <= at <= high + span:
                    continue  # a tick outside its axis's view is never drawn
                for label in (tick.label1, tick.label2):
                    if label.get_visible() and label.get_text().strip():
                        labels.append(label)
    return labels


def _drawn_texts(fig):
    """Every text ``fig`` draws: its texts that are not tick labels, and the tick labels it draws (_tick_labels)."""
    every_tick = {id(label) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
                  for tick in axis.get_major_ticks() + axis.get_minor_ticks() for label in (tick.label1, tick.label2)}
    drawn = [t for t in _texts(fig) if id(t) not in every_tick] + _tick_labels(fig)
    return list({id(t): t for t in drawn}.values())


def cap_heights(fig, dpi=None):
    """The cap height, in pixels of a PNG drawn at ``dpi`` (the figure's own by default), of each text of ``fig``."""
    dpi = fig.dpi if dpi is None else dpi
    fig.canvas.draw()  # lays the figure out and makes its tick labels
    texts = _drawn_texts(fig)
    inside = fig.bbox
    heights = []
    for text in texts:
        try:
            box = text.get_window_extent()
        except (RuntimeError, ValueError):
            continue
        if box.width <= 0 or box.height <= 0 or not box.overlaps(inside):
            continue
        heights.append(text.get_fontsize() * dpi / 72 * CAP_RATIO)
    return sorted(round(h, 1) for h in heights)


def _slide_size(old, smallest):
    return min(SLIDE_MAX_PT, max(SLIDE_MIN_PT, SLIDE_MIN_PT + (old - smallest)))


def fit_for_slide(fig):
    """Redraw ``fig`` (in place) for a slide: a 16:9 canvas, every text at least SLIDE_MIN_PT points. Returns it.

    Figures whose axes come from a grid (``plt.subplots``, a GridSpec) get matplotlib's
    constrained layout, which makes room for the larger text; a figure placed by hand
    keeps its axes where they are. Applied once per figure (a second call does nothing).
    """
    if getattr(fig, "_attention_slide", False):
        return fig
    fig._attention_slide = True
    from matplotlib.backend_bases import FigureCanvasBase

    if type(fig.canvas) is FigureCanvasBase:  # plt.close(fig) leaves a canvas whose draw() lays nothing out
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    _keep_panels(fig)
    fig.canvas.draw()
    texts = _texts(fig)
    sizes = [t.get_fontsize() for t in texts + _tick_labels(fig)]
    if not sizes:
        return fig
    smallest = min(sizes)
    old_w, old_h = fig.get_size_inches()
    growth = sorted(_slide_size(size, smallest) / size for size in sizes)[len(sizes) // 2]
    for text in texts:
        text.set_fontsize(_slide_size(text.get_fontsize(), smallest))
    for ax in fig.axes:
        for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            ticks = axis.get_major_ticks()
            if ticks:
                size = _slide_size(ticks[0].label1.get_fontsize(), smallest)
                ax.tick_params(axis=which, which="both", labelsize=size)
    # The canvas keeps the figure's own shape and size, at most the slide's picture area: the deck grows
    # a picture into the room its slide leaves (web/templates/slides), so a small canvas with large text
    # is read larger on the slide, while a canvas made larger than the room would be shrunk, its text
    # with it (measured: a 16:9 canvas of 880 x 495 px for every figure left 07's small; growing every
    # canvas with its text left 16 slides' median text under 13 px). Only a figure whose texts still
    # run into each other once untangled grows, step by step, at most by its text's growth (below).
    width, height = SLIDE_SIZE_IN
    fig.set_dpi(SLIDE_DPI)
    factor = min(1.0, width / old_w, height / old_h)
    fig.set_size_inches(old_w * factor, old_h * factor, forward=False)
    engine = fig.get_layout_engine()
    if engine is None and fig.axes and all(ax.get_subplotspec() is not None for ax in fig.axes):
        try:
            fig.set_layout_engine("constrained")
            fig.canvas.draw()
        except Exception:  # a grid constrained layout cannot solve (a zero-height row): placed as drawn
            fig.set_layout_engine("none")
    try:
        fig.canvas.draw()
    except Exception:  # the layout engine the figure came with cannot solve the slide's size
        fig.set_layout_engine("none")
    drop_crowded_values(fig)
    limit = min(max(1.0, growth), width / old_w, height / old_h)
    while factor < limit and overlapping_texts(fig):  # room first, then smaller ticks and wrapped titles
        factor = min(limit, factor * 1.15)
        fig.set_size_inches(old_w * factor, old_h * factor, forward=False)
    _untangle_ticks(fig)
    _untangle_texts(fig)
    return fig


def slide_panels(fig, *keep):
    """Show only the panels ``keep`` of ``fig`` when it is drawn for a slide; return ``fig``.

    A slide shows at most two panels of a multi-panel figure (issue 32); the notebook shows
    every panel, so nothing changes in the notebook medium. ``keep`` are indices into the
    figure's panels (:func:`panels`' order: its axes as drawn, colour bars and twins left
    out). On a slide the kept panels take the figure's grid alone, with their colour bars;
    the others and their colour bars are left out of the slide's picture, and its
    description says which panels it shows. Raises ``ValueError`` for no index or one the
    figure does not have.
    """
    main = _panel_axes(fig)
    if not keep:
        raise ValueError("slide_panels needs the index of at least one panel to keep")
    for k in keep:
        if isinstance(k, bool) or not isinstance(k, int) or not -len(main) <= k < len(main):
            raise ValueError(f"the figure has {len(main)} panels (indices 0-{len(main) - 1}): no panel {k!r}")
    fig._attention_slide_panels = tuple(sorted({k % len(main) for k in keep}))
    return fig


def _panel_axes(fig):
    """The figure's panels in drawing order: visible axes that are not colour bars, a twin counted with its axes."""
    found, places = [], set()
    for ax in fig.axes:
        if not ax.get_visible() or ax.get_label() == "<colorbar>":
            continue
        place = tuple(round(v, 3) for v in ax.get_position().bounds)
        if place in places:
            continue
        places.add(place)
        found.append(ax)
    return found


def _keep_panels(fig):
    """Apply :func:`slide_panels`: the kept panels on a grid of their own; returns (kept, of) or None."""
    keep = getattr(fig, "_attention_slide_panels", None)
    if not keep:
        return None
    from matplotlib.gridspec import GridSpec

    main = _panel_axes(fig)
    kept = [main[k] for k in keep if k < len(main)]
    places = {ax: tuple(round(v, 3) for v in ax.get_position().bounds) for ax in main}
    for ax in list(fig.axes):
        bar = getattr(ax, "_colorbar", None)
        if ax.get_label() == "<colorbar>":
            owner = getattr(getattr(bar, "mappable", None), "axes", None)
        else:
            place = tuple(round(v, 3) for v in ax.get_position().bounds)
            owner = next((m for m in main if places[m] == place), None)
        if owner is not None and owner not in kept:
            ax.remove()
    specs = [ax.get_subplotspec() for ax in kept]
    if all(spec is not None for spec in specs):
        rows = {spec.rowspan.start for spec in specs}
        across = len(rows) == 1
        grid = GridSpec(1, len(kept), figure=fig) if across else GridSpec(len(kept), 1, figure=fig)
        for k, ax in enumerate(kept):
            ax.set_subplotspec(grid[0, k] if across else grid[k, 0])
        old_w, old_h = fig.get_size_inches()
        columns = len({spec.colspan.start for spec in (ax.get_subplotspec() for ax in main) if spec is not None})
        if across and columns > len(kept):  # two of four panels across need about half the width
            fig.set_size_inches(max(old_w * len(kept) / columns, old_h), old_h, forward=False)
    return keep, len(main)


def panels(fig):
    """The number of panels of ``fig``: its visible axes that are not colour bars, twins counted once."""
    return len(_panel_axes(fig))


def drop_crowded_values(fig):
    """Hide the numbers in a panel's cells (gid CELL_VALUE, or "value:<matrix>:..." per matrix) where two overlap.

    At slide size a small panel cannot hold one readable number per cell: numbers that run
    into each other read as neither. The panel then shows its colours (and its colour bar)
    alone, as a slide should; titles, axis labels and ticks stay. Returns the number of
    panels whose values were hidden.
    """
    hidden = 0
    fig.canvas.draw()  # lays the figure out (any canvas: the window extents find their own renderer)
    groups = {}
    for ax in fig.axes:
        for t in ax.texts:
            gid = str(t.get_gid() or "")
            if not (t.get_visible() and t.get_text().strip()):
                continue
            if gid == CELL_VALUE:
                groups.setdefault((id(ax), gid), []).append(t)
            elif gid.startswith(CELL_VALUE_PREFIX):  # "value:<matrix>:<i>:<j>": a diagram's matrix cells
                groups.setdefault((id(ax), gid.split(":")[1]), []).append(t)
    for texts in groups.values():
        boxes = []
        for text in texts:
            try:
                boxes.append(text.get_window_extent())
            except (RuntimeError, ValueError):
                continue
        crowded = any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
        if crowded:
            for text in texts:
                text.set_visible(False)
            hidden += 1
    return hidden


# Issue 32, item 2: on a slide no two texts of a picture may run into each other. Tick labels that collide
# are first made smaller (never under SLIDE_TICK_FLOOR_PT: 11 pt is a 10.6 px cap on a 1280 x 720 screen,
# above the 9 px floor), then turned upright (x labels), then thinned (every k-th kept); a title or label
# that runs into another text is wrapped onto two lines at its middle space, then made smaller, but never
# under SLIDE_MIN_PT. What still collides is counted (overlapping_texts) and reported by tools/deck_report.py.
SLIDE_TICK_FLOOR_PT = 11.0
OVERLAP_PAD_PX = 1.0  # boxes that share less than this many pixels each way only touch


def _shows(patch):
    """Whether a text's box is seen: an edge drawn, or a fill other than the page's white (a white halo
    that keeps lines off a label is not seen on a white figure)."""
    from matplotlib.colors import to_rgba

    face, edge = to_rgba(patch.get_facecolor()), to_rgba(patch.get_edgecolor())
    return (edge[3] > 0 and patch.get_linewidth() > 0) or (face[3] > 0 and face[:3] != (1.0, 1.0, 1.0))


def _boxes(texts):
    """``(text, box)`` of each text: what it draws, its words and the box drawn round them (an annotation's
    arrow is not part of it: two labels whose leader lines cross do not run into each other)."""
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    found = []
    for text in texts:
        try:
            box = Text.get_window_extent(text)
            patch = text.get_bbox_patch()
            if patch is not None and patch.get_visible() and _shows(patch):
                box = Bbox.union([box, patch.get_window_extent()])
        except (RuntimeError, ValueError):
            continue
        if box.width > 0 and box.height > 0:
            found.append((text, box))
    return found


def _collide(a, b, pad=OVERLAP_PAD_PX):
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > pad) and (min(a.y1, b.y1) - max(a.y0, b.y0) > pad)


def overlapping_texts(fig):
    """Pairs ``(a, b)`` of visible texts of ``fig`` (titles, labels, ticks, numbers) whose boxes overlap.

    Two boxes overlap when they share more than :data:`OVERLAP_PAD_PX` pixels both across and
    down; texts outside the canvas are left out. The figure is drawn first.
    """
    fig.canvas.draw()
    inside = fig.bbox
    texts = _drawn_texts(fig)
    boxes = [(t, b) for t, b in _boxes(texts) if b.overlaps(inside)]
    pairs = []
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            if _collide(box_a, box_b):
                pairs.append((a, b))
    return pairs


def _axis_labels(axis):
    """The drawn major tick labels of ``axis``: visible, with text, their tick inside the axis's view."""
    low, high = sorted(axis.get_view_interval())
    span = (high - low) * 1e-9
    return [t.label1 for t in axis.get_major_ticks() if t.label1.get_visible() and t.label1.get_text().strip()
            and (t.get_loc() is None or low - span <= t.get_loc() <= high + span)]


def _crowded(labels):
    boxes = [b for _, b in _boxes(labels)]
    return any(_collide(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def _untangle_ticks(fig):
    """Make every axis's tick labels stand apart: smaller, then upright (x), then thinned. Returns the axes changed."""
    from matplotlib.ticker import FixedLocator, MaxNLocator

    changed = 0
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            labels = _axis_labels(axis)
            if len(labels) < 2 or not _crowded(labels):
                continue
            changed += 1
            size = labels[0].get_fontsize()
            while size > SLIDE_TICK_FLOOR_PT and _crowded(_axis_labels(axis)):
                size = max(SLIDE_TICK_FLOOR_PT, size - 1)
                ax.tick_params(axis=which, which="major", labelsize=size)
                fig.canvas.draw()
            if not _crowded(_axis_labels(axis)):
                continue
            if which == "x" and not all(lab.get_rotation() == 90 for lab in _axis_labels(axis)):
                ax.tick_params(axis="x", which="major", labelrotation=90)
                fig.canvas.draw()
                if not _crowded(_axis_labels(axis)):
                    continue
            labels = _axis_labels(axis)
            if not isinstance(axis.get_major_locator(), FixedLocator):
                for nbins in range(max(2, len(labels) - 1), 1, -1):
                    axis.set_major_locator(MaxNLocator(nbins=nbins))
                    fig.canvas.draw()
                    if not _crowded(_axis_labels(axis)):
                        break
                continue
            ticks = [t.label1 for t in axis.get_major_ticks() if t.label1.get_text().strip()]
            for step in range(2, len(ticks)):
                for k, label in enumerate(ticks):
                    label.set_visible(k % step == 0)
                if not _crowded([t for t in ticks if t.get_visible()]):
                    break
    return changed


def _wrap_once(text):
    """``text`` on two lines, broken at the space nearest its middle outside any formula; None if it cannot be."""
    s = text.get_text()
    if "\n" in s:
        return None
    spaces, inside = [], False
    for k, ch in enumerate(s):
        if ch == "$" and (k == 0 or s[k - 1] != "\\"):
            inside = not inside
        elif ch == " " and not inside:
            spaces.append(k)
    if not spaces:
        return None
    k = min(spaces, key=lambda at: abs(at - len(s) / 2))
    return s[:k] + "\n" + s[k + 1:]


def _untangle_texts(fig, rounds=6):
    """Wrap, then shrink, titles and labels that run into other texts. Returns the texts changed."""
    ticks = {id(t) for t in _tick_labels(fig)}
    changed = set()
    for _ in range(rounds):
        pairs = [(a, b) for a, b in overlapping_texts(fig) if not (id(a) in ticks and id(b) in ticks)]
        if not pairs:
            break
        for a, b in pairs:
            # the longer of the two that is not a tick label gives way
            movable = [t for t in (a, b) if id(t) not in ticks and t.get_gid() != CELL_VALUE
                       and not str(t.get_gid() or "").startswith(CELL_VALUE_PREFIX)]
            moved = False
            for text in sorted(movable, key=lambda t: -len(t.get_text())):  # the longer one gives way first
                wrapped = _wrap_once(text)
                if wrapped is not None:
                    text.set_text(wrapped)
                elif text.get_fontsize() > SLIDE_MIN_PT:
                    text.set_fontsize(max(SLIDE_MIN_PT, text.get_fontsize() - 2))
                else:
                    continue
                changed.add(id(text))
                moved = True
                break
            if moved:
                break  # lay the figure out again before the next pair
        else:
            break
    return len(changed)
