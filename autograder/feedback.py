"""What a student reads about a graded submission, built from the trusted result.

Every line comes from the grader's own data: check names, points, the problems a
judge listed (numbers and names, bounded in length), what each check's hidden
inputs are like, where to reread. Never a hidden test's source, a reference
value, a file's content or a traceback of grader code.
"""
from __future__ import annotations

import html
import os
import re

import nh3

#: where the course's book is served (e.g. "https://hub.example.edu/services/book/"); unset, the
#: feedback names the lecture and section without a link, so no link is ever dead
BOOK_URL = os.environ.get("COURSE_BOOK_URL", "")

CSS = """
.course-feedback {font-family: system-ui, sans-serif; max-width: 60rem; margin: 1rem 0;}
.course-feedback h3 {font-size: 1.05rem; margin: 1rem 0 .3rem;}
.course-feedback li {margin: .3rem 0;}
.course-feedback .pass {color: #176f2c; font-weight: 600;}
.course-feedback .fail {color: #a61b1b; font-weight: 600;}
.course-feedback .muted {color: #555; font-size: .9em;}
/* the whole of a check's line, wrapped, never cut in a scrolling box */
.jp-OutputArea-output pre, .output_text pre {white-space: pre-wrap; overflow-wrap: anywhere;}
.rendered_html table, .jp-RenderedMarkdown table {border-collapse: collapse; margin: .5rem 0;}
.rendered_html th, .rendered_html td, .jp-RenderedMarkdown th, .jp-RenderedMarkdown td
    {border: 1px solid #ccc; padding: .25rem .7rem;}
math[display="block"] {margin: .6rem 0;}
.course-eq {display: flex; align-items: center; justify-content: center; gap: 2rem;}
mtd:first-child {text-align: right;} mtd + mtd {text-align: left;}   /* aligned: at the = sign */
"""

# Equations typeset here as MathML, which browsers draw without a script: the page needs no
# MathJax and no network, as a file, on a hub without internet, anywhere.
_MATH = re.compile(r"\$\$(.+?)\$\$|(?<![\\$])\$(?!\s)([^$\n]+?)(?<!\s)\$", re.S)
_TAG = re.compile(r"\\tag\{([^{}]*)\}")
_MATHML = {"math", "mrow", "mi", "mo", "mn", "msub", "msup", "msubsup", "mfrac", "msqrt", "mroot", "mtext",
           "mover", "munder", "munderover", "mtable", "mtr", "mtd", "mspace", "mstyle", "mpadded", "menclose"}
_MATHML_ATTRIBUTES = {tag: {"display", "xmlns", "stretchy", "mathvariant", "fence", "separator", "lspace",
                            "rspace", "accent", "accentunder", "columnalign", "movablelimits",
                            "linethickness", "width", "displaystyle", "scriptlevel", "notation"}
                      for tag in _MATHML}


def _check_info(name: str):
    try:
        from autograder.reference.grading import all_checks
        return all_checks().get(name)
    except Exception:                     # feedback never fails for want of a description
        return None


def _to_mathml(tex: str, display: bool) -> str:
    """latex2mathml, with `aligned` as a table of rows (latex2mathml writes its & and \\\\ as text)."""
    from latex2mathml.converter import convert
    aligned = re.fullmatch(r"\s*\\begin\{aligned\}(.*)\\end\{aligned\}\s*", tex, re.S)
    if not aligned:
        return convert(tex, display="block" if display else "inline")
    inner = lambda part: re.sub(r"^<math[^>]*>|</math>$", "", convert(part))
    rows = "".join("<mtr>" + "".join(f"<mtd columnalign='{'right' if k == 0 else 'left'}'>{inner(cell)}</mtd>"
                                     for k, cell in enumerate(row.split("&"))) + "</mtr>"
                   for row in re.split(r"\\\\", aligned[1]) if row.strip())
    return f"<math xmlns='http://www.w3.org/1998/Math/MathML' display='block'><mtable>{rows}</mtable></math>"


def typeset_math(markdown: str) -> str:
    """$...$ and $$...$$ in a markdown cell -> MathML (sanitised: only MathML's own elements and
    attributes), a display's \\tag{N} as its number beside it; what does not parse stays TeX."""
    def one(m):
        display, tex = m[1] is not None, m[1] if m[1] is not None else m[2]
        tag = _TAG.search(tex)
        try:
            mathml = _to_mathml(_TAG.sub("", tex), display)
        except Exception:                         # anything latex2mathml cannot read stays as written
            return m[0]
        mathml = nh3.clean(mathml, tags=_MATHML, attributes=_MATHML_ATTRIBUTES)
        if not display:
            return mathml
        number = f"<span>({html.escape(tag[1])})</span>" if tag else ""
        return f"\n\n<div class='course-eq'>{mathml}{number}</div>\n\n"
    return _MATH.sub(one, markdown)


def lecture_links(markdown: str) -> str:
    """The exercise's [lecture NN](../lectures/NN_topic.ipynb) links, which lead nowhere from a
    feedback page's folder: into the book where COURSE_BOOK_URL says it is, else plain words."""
    def one(m):
        if not BOOK_URL:
            return f"{m[1]} (lectures/{m[2]}.ipynb)"
        from course import book
        return f"[{m[1]}]({book.lecture_url(m[2], root=BOOK_URL)})"
    return re.sub(r"\[([^\]]+)\]\(\.\./lectures/(\d\d_\w+)\.ipynb\)", one, markdown)


def _lecture_link(lecture) -> str:
    """(notebook stem, section or equation) -> a link into the book where COURSE_BOOK_URL says
    where it is served, else the words (the lecture notebook and where in it)."""
    if not lecture:
        return ""
    stem, where = (lecture if isinstance(lecture, (tuple, list)) else (lecture, ""))
    text = f"lecture {stem}" + (f", {where}" if where else "")
    if not BOOK_URL:
        return html.escape(f"lectures/{stem}.ipynb" + (f", {where}" if where else ""))
    from course import book
    url = book.lecture_url(stem, book.anchor(stem, where) if where else "", root=BOOK_URL)
    return f"<a href='{html.escape(url)}'>{html.escape(text)}</a>"


def check_lines(cell: dict) -> str:
    """A test cell's checks as plain text (the cell's output in nbgrader's feedback)."""
    lines = []
    for name, problems in cell.get("checks", {}).items():
        points = cell.get("weights", {}).get(name)
        worth = f" ({points:g} point{'s' if points != 1 else ''})" if points is not None else ""
        if problems:
            lines.append(f"FAILED {name}{worth}: " + "; ".join(problems)[:600])
        else:
            lines.append(f"passed {name}{worth}")
    return "\n".join(lines) + "\n"


def _check_item(name: str, problems: list, weight) -> str:
    info = _check_info(name)
    worth = f" <span class='muted'>({weight:g} pt)</span>" if weight is not None else ""
    if not problems:
        return f"<li><span class='pass'>passed</span> <code>{html.escape(name)}</code>{worth}</li>"
    tips = []
    if getattr(info, "about", ""):
        tips.append("what the grader ran: " + html.escape(info.about))
    if getattr(info, "visible", ""):
        tips.append(f"the visible check <code>{html.escape(info.visible)}</code> tests the same kind of thing: "
                    "run it again")
    lecture = _lecture_link(getattr(info, "lecture", None))
    if lecture:
        tips.append("reread " + lecture)
    return (f"<li><span class='fail'>failed</span> <code>{html.escape(name)}</code>{worth}: "
            + html.escape("; ".join(problems)[:600])
            + "".join(f"<div class='muted'>{t}</div>" for t in tips) + "</li>")


def summary_html(result: dict, student: str, score: float | None = None, status: str = "",
                 reason: str = "") -> str:
    """The summary at the top of a feedback page: the total, each test cell with its
    checks (passed, or what failed, what the grader ran, where to reread), the notes."""
    score = result.get("score", 0.0) if score is None else score
    sections = []
    for cell in result.get("cells", []):
        items = "".join(_check_item(name, problems, cell.get("weights", {}).get(name))
                        for name, problems in cell.get("checks", {}).items())
        sections.append(f"<h3><code>{html.escape(cell['grade_id'])}</code>: {cell['points']:g} / "
                        f"{cell['max_points']:g}</h3><ul>{items}</ul>")
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in result.get("notes", []))
    return (f"<div class='course-feedback'><style>{CSS}</style>"
            f"<h2>{html.escape(result.get('notebook', ''))}: feedback for {html.escape(student)}</h2>"
            f"<p><b>{score:g} / {result.get('max_score', 0):g} points</b>"
            + (f" &middot; {html.escape(status)}" if status else "")
            + (f" &middot; {html.escape(reason)}" if reason else "") + "</p>"
            + "".join(sections)
            + (f"<h3>Notes</h3><ul>{notes}</ul>" if notes else "")
            + "<p class='muted'>The checks run your functions on other inputs than the visible tests "
              "(other sizes, several steps, gradients); the messages say what differed, never the "
              "expected values.</p></div>")


def page(result: dict, student: str, status: str = "", reason: str = "") -> str:
    """A whole page, for a submission nbgrader could not take (refused, unreadable)."""
    title = html.escape(f"{result.get('notebook', '')} - {student}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
            + summary_html(result, student, status=status, reason=reason) + "</body></html>")
