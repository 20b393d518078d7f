"""Sphinx settings of the site (tools/site/build.py stages the sources and runs Sphinx with ``-c tools/site``).

Nothing is fetched when the site is built or read: MyST-NB executes no notebook, MathJax and
ipywidgets' HTML manager come from build/vendor/ (tools/web_assets.py), copied into the staged
``_vendor/`` folder; the theme's fonts and icons ship inside pydata-sphinx-theme.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SOLUTIONS = os.environ.get("SITE_SOLUTIONS") == "1"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
import navigation  # noqa: E402  ([project.urls] Source: None while it is the placeholder)

import helpers  # noqa: E402

project = "Attention, Step by Step"
author = "The authors of Attention, Step by Step"
copyright = "the authors; code MIT, text CC BY 4.0"
release = version = helpers.__version__
language = "en"
root_doc = "index"

extensions = ["myst_nb"]
exclude_patterns = ["_build", "_vendor", "**.ipynb_checkpoints"]
if not SOLUTIONS:
    exclude_patterns.append("instructor/**")

# MyST-NB: the stored outputs, as they are
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "html_image"]
myst_heading_anchors = 4
myst_dmath_double_inline = True
# The text/html of a described figure (an <img> with its alt) comes before its image/png
nb_mime_priority_overrides = [("html", "text/html", 5)]
# ipywidgets' HTML manager from the vendored copy, not a CDN
# (the course's widgets are ipywidgets' own controls, built into the manager: no module is fetched)
nb_ipywidgets_js = {
    "requirejs/require.js": {},
    "@jupyter-widgets/html-manager/dist/embed-amd.js": {},
}

# MathJax 3 from the vendored copy
mathjax_path = "mathjax/es5/tex-chtml-full.js"
STAGE = Path(os.environ.get("SITE_STAGE", ROOT / "build" / "site-src"))
html_static_path = [str(STAGE / "_vendor"), str(Path(__file__).resolve().parent / "_static_site")]
html_css_files = ["site.css"]
html_js_files = ["site.js"]

# Links to files the site does not publish (scripts, folders) stay as text; Jupyter's own anchors
# ("#Appendix:-the-document...") are not MyST's, so a missing anchor is no error either.
suppress_warnings = ["myst.xref_missing", "myst.header", "mystnb.unknown_mime_type", "misc.highlighting_failure",
                     "toc.not_included", "myst.strikethrough"]

html_theme = "sphinx_book_theme"
html_title = project
html_last_updated_fmt = None
html_show_sourcelink = False
html_copy_source = True
html_theme_options = {
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "show_navbar_depth": 1,
    "navigation_with_keys": False,
    "search_bar_text": "Search the course...",
    # no analytics, no external icons
    "icon_links": [],
}
if navigation.REPOSITORY is not None:
    # Launch buttons only once pyproject.toml names the repository
    html_theme_options.update({
        "repository_url": navigation.repository_url(),
        "repository_branch": "main",
        "path_to_docs": "",
        "use_repository_button": True,
        "launch_buttons": {"colab_url": "https://colab.research.google.com", "binderhub_url": "https://mybinder.org",
                           "notebook_interface": "jupyterlab"},
    })
