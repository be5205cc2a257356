"""Sphinx configuration of the self-study book (built by book/build.py: `make book`)."""
from pathlib import Path

import importlib.util
import re

import myst_nb.core.render
from docutils import nodes

from course.paths import ROOT

project = "RNN language models with DyNet"
author = "the course"
copyright = "the course's authors, MIT licence"

extensions = ["myst_nb"]
# MathJax 3 served from the book itself (no CDN): the files of the sphinx-mathjax-offline package,
# copied as static files (its extension would block parallel builds)
MATHJAX = Path(importlib.util.find_spec("sphinx-mathjax-offline").origin).parent / "static"
mathjax_path = "mathjax/tex-chtml.js"
myst_enable_extensions = ["dollarmath"]
myst_dmath_double_inline = True                       # $$...$$ inside a paragraph
myst_heading_anchors = 3

# Execution: by the code of each notebook, cached; a text edit re-executes nothing
nb_execution_mode = "cache"
nb_execution_cache_path = str(ROOT / "_build" / "jupyter_cache")
nb_execution_timeout = 600
nb_execution_raise_on_error = True                    # a failing lecture fails the build
nb_execution_show_tb = True
nb_execution_excludepatterns = ["exercises/*"]        # students' notebooks: shown, not run
nb_merge_streams = True
nb_render_markdown_format = "myst"                    # a cell's displayed Markdown: tables too (CommonMark has none)

html_theme = "sphinx_book_theme"
html_title = project
html_static_path = [str(ROOT / "book" / "static"), str(MATHJAX)]
html_css_files = ["book.css"]
html_favicon = str(ROOT / "book" / "static" / "favicon.svg")   # else browsers ask for /favicon.ico
html_theme_options = {
    "use_download_button": True,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "home_page_in_toc": True,
    # the page's sections are listed in the left bar instead, so that figures drawn wider
    # than a text column (the lectures' side-by-side panels) get the width of the page
    "secondary_sidebar_items": [],
}
html_context = {"default_mode": "light"}       # the theme logs an error without one
html_last_updated_fmt = None
exclude_patterns = ["**.ipynb_checkpoints"]


def _tags_outside_split(app, doctree):
    """Sphinx wraps a multi-line display in \\begin{split}, where MathJax refuses \\tag:
    hand such a display to MathJax as it was written, in \\[ \\]."""
    for node in doctree.findall(nodes.math_block):
        latex = node.astext()
        if r"\tag" in latex and not node.get("nowrap") and ("\\\\" in latex or "&" in latex):
            node.children = [nodes.Text(r"\[" + latex + r"\]")]
            node["nowrap"] = True


def _coalesce_streams(outputs):
    """Join a cell's consecutive stream outputs and apply carriage returns, as Jupyter shows them.

    MyST-NB's own merge (nb_merge_streams) ends every chunk with a newline, so each update
    of a progress bar (tqdm writes "\\r" and the new bar) became a line of its own."""
    merged = []
    for out in outputs:
        if (out["output_type"] == "stream" and merged and merged[-1]["output_type"] == "stream"
                and merged[-1]["name"] == out["name"]):
            merged[-1]["text"] += out["text"]
        else:
            merged.append(out)
    for out in merged:
        if out["output_type"] == "stream":
            out["text"] = re.sub(r"[^\n]*\r(?=[^\n])", "", out["text"])
    return merged


myst_nb.core.render.coalesce_streams = _coalesce_streams


def setup(app):
    app.connect("doctree-read", _tags_outside_split)
