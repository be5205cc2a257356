"""Links into the self-study book, the lectures rendered with their outputs (`make book`).

The first line of every answer cell names its lecture relatively, so that it reads the same
in a local JupyterLab, in the student release, on the hub and in the book::

    # The lecture: ../lectures/05_gru.ipynb, eq 56
    # The lecture: ../lectures/04_forget_gate.ipynb, section "1. What the forget gate does to the memory"

(the Markdown cell above it holds the same as a link that JupyterLab opens). The book turns
each into a link to the section's or equation's anchor (:func:`links_in`). Built, the book is
in ``_build/html/`` (``_build/html/lectures/05_gru.html``), and

    python -m course.book            # serves _build/html at http://localhost:8000/services/book/

serves it at the path a course hub would serve it at.
"""
from __future__ import annotations

import argparse
import functools
import re
import unicodedata

from course.paths import ROOT

#: where the book's root is served: the course hub's static service, and `python -m course.book`
BOOK_ROOT = "/services/book/"
#: where `make book` writes the book in a checkout
BUILT = ROOT / "_build" / "html"

#: lecture number -> the text a bare "eq N" of that lecture is numbered in (the tutorial's, "T", elsewhere);
#: book/equations.py reads it too
DEFAULT_NAMESPACE = {"08": "WS", "11": "A"}

#: an answer cell's first line: the lecture, then a section ("...") or an equation ([WS] eq 9)
LECTURE_LINE = re.compile(r'# The lecture: \.\./lectures/(?P<page>\d\d_\w+)\.ipynb, '
                          r'(?:section "(?P<section>[^"\n]+)"|(?P<equation>(?:\[\w+\] )?eq \w+))')


def lecture_url(chapter: str, anchor: str = "", root: str = BOOK_ROOT) -> str:
    """The URL of a lecture page, or of one of its sections or equations.

    chapter: the lecture's file name without ``.ipynb``, e.g. ``"05_gru"``.
    anchor:  a section's id (``"eq-59-is-a-weighted-average"``) or an equation's (``"eq-t-59"``).
    root:    the book's root: the hub's path (default), or e.g. ``"../_build/html/"``.
    """
    if not re.fullmatch(r"\d\d_\w+", chapter):
        raise ValueError(f"chapter must be a lecture's name like '05_gru', not {chapter!r}")
    return f"{root}lectures/{chapter}.html" + (f"#{anchor}" if anchor else "")


def anchor(chapter: str, where: str) -> str:
    """The id, in a lecture's page, of a section heading ("1. Eq 59 is a weighted average")
    or a displayed equation ("eq 59", "[WS] 8"). An equation shown in more than one lecture
    has a second id there; where the book is built, the id that page really has is chosen."""
    m = re.fullmatch(r"(?:eq\s+|\[(\w+)\]\s*(?:eq\s+)?)([A-Z]?)(\d+)", where.strip())
    if m:                                    # "eq 59" (the tutorial's), "[WS] 8", "eq D2" (lecture 09's own)
        base = f"eq-{(m[1] or m[2] or DEFAULT_NAMESPACE.get(chapter[:2], 'T')).lower()}-{m[3]}"
        wanted = [base, f"{base}-{chapter[:2]}", f"{base}-{chapter}"]
    else:                                    # as docutils makes a heading's id; a title may be shortened
        text = unicodedata.normalize("NFKD", where).encode("ascii", "ignore").decode().lower()
        wanted = [re.sub(r"^[^a-z]+", "", re.sub(r"[^a-z0-9]+", "-", text)).strip("-")]
    page = BUILT / "lectures" / f"{chapter}.html"
    if page.is_file():
        ids = re.findall(r'id="([^"]+)"', page.read_text(encoding="utf-8"))
        for w in wanted:
            found = next((i for i in ids if i == w or (not m and i.startswith(w + "-"))), None)
            if found:
                return found
    return wanted[0]


def links_in(text: str) -> list[tuple[str, str]]:
    """The ``(chapter, anchor)`` of every lecture line in a text (an answer cell's source)."""
    return [(m["page"], anchor(m["page"], m["section"] or m["equation"])) for m in LECTURE_LINE.finditer(text)]


def book_handler():
    """The request handler that serves the built book under BOOK_ROOT, as the hub does (http.server
    imported here: every process that loads the course, each grading sandbox too, would pay for it)."""
    import http.server

    class BookHandler(http.server.SimpleHTTPRequestHandler):
        def translate_path(self, path):
            if path.startswith(BOOK_ROOT):
                path = "/" + path[len(BOOK_ROOT):]
            return super().translate_path(path)
    return BookHandler


def main(argv=None):
    parser = argparse.ArgumentParser(description="Serve the built book at " + BOOK_ROOT)
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    if not (BUILT / "index.html").exists():
        raise SystemExit(f"no book in {BUILT}: run `make book` first")
    import http.server
    handler = functools.partial(book_handler(), directory=str(BUILT))
    print(f"The book: http://localhost:{args.port}{BOOK_ROOT}index.html (Ctrl-C stops)")
    http.server.ThreadingHTTPServer(("localhost", args.port), handler).serve_forever()


if __name__ == "__main__":
    main()
