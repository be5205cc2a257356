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
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nh3

from autograder import nbgrader_runs

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


# ------------------------------------------------------------------ a page that shows a student's work
# The student's markdown is rendered here, at the end: the page's markdown filter (nbconvert's parser,
# whose math tokens become MathML), then nh3, and nh3 again over the whole body of the finished page
# (`sanitized_page`), so nothing that writes HTML comes after the sanitiser. Math is typeset from the
# parser's tokens, so `$x$` inside an attribute, a code span or a link stays text.

#: what the student's text may take of a page: a cell's characters, a page's, a cell's equations (the
#: cost of a page grows with them: 0.5 MB of `$x$ ` in one cell took 90 s and 1.2 GB to typeset)
CELL_CHARS = 20_000
PAGE_CHARS = 200_000
CELL_EQUATIONS = 300
PAGE_IMAGES = 2_000_000      # characters of base64: the images a student attached to markdown cells
#: the browser's own guarantee that a page loads nothing from anywhere and runs no script
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
_TAGS = set(nh3.ALLOWED_TAGS) | _MATHML | {"main"}
_ATTRIBUTES = {**{tag: set(names) for tag, names in nh3.ALLOWED_ATTRIBUTES.items()}, **_MATHML_ATTRIBUTES}
_ATTRIBUTES["*"] = {"id", "class", "title"}          # nbconvert's ids and classes; the template's anchors
_ATTRIBUTES["a"] = _ATTRIBUTES.get("a", set()) | {"name"}
_ATTRIBUTES["details"] = {"open"}
_EMBEDDED = re.compile(r"data:image/(?:png|jpeg|gif);base64,[A-Za-z0-9+/=\s]*")


def _loads_nothing(tag: str, attribute: str, value: str):
    """An image only from the page itself (a PNG, JPEG or GIF embedded as data), never from a
    server or a file; no link to a data: URL."""
    if attribute == "src":
        return value if _EMBEDDED.fullmatch(value) else None
    if value.lstrip().lower().startswith("data:"):
        return None
    return value


def clean(fragment: str) -> str:
    """HTML that runs nothing and loads nothing: nh3 with nbconvert's classes and ids, MathML, and
    images only as embedded data."""
    return nh3.clean(fragment, tags=_TAGS, attributes=_ATTRIBUTES, attribute_filter=_loads_nothing,
                     url_schemes={"http", "https", "mailto", "data"}, link_rel="noopener noreferrer")


def _renderer(typeset: bool):
    """nbconvert's renderer of a notebook's markdown, a missing attachment shown as its alt text
    (nbconvert raises on it, which stopped `nbgrader autograde` and `generate_feedback` for that
    student), and with ``typeset`` its math as MathML (a cell's first CELL_EQUATIONS equations;
    later ones, and what latex2mathml cannot read, stay TeX)."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer

    class Renderer(IPythonRenderer):
        equations = 0

        def _math(self, tex: str, display: bool) -> str:
            written = self.escape_html(f"$${tex}$$" if display else f"${tex}$")
            self.equations += 1
            if not typeset or self.equations > CELL_EQUATIONS:
                return written
            tag = _TAG.search(tex)
            try:
                mathml = _to_mathml(_TAG.sub("", tex), display)
            except Exception:                     # anything latex2mathml cannot read stays as written
                return written
            if not display:
                return mathml
            number = f"<span>({html.escape(tag[1])})</span>" if tag else ""
            return f"<span class='course-eq'>{mathml}{number}</span>"

        def inline_math(self, body: str) -> str:
            return self._math(body, display=False)

        def block_math(self, body: str) -> str:
            return self._math(body, display=True)

        def latex_environment(self, name: str, body: str) -> str:
            return self._math(f"\\begin{{{name}}}{body}\\end{{{name}}}", display=True)

        def _embed_image_or_attachment(self, src: str) -> str:
            if src.startswith("attachment:") and src[len("attachment:"):] not in self.attachments:
                return ""
            return super()._embed_image_or_attachment(src)

    return Renderer


def render_markdown(source: str, attachments: dict | None = None, typeset: bool = True) -> str:
    """A markdown cell as nbconvert renders it (see :func:`_renderer`), NOT sanitised."""
    from nbconvert.filters.markdown_mistune import MarkdownWithMath
    renderer = _renderer(typeset)(escape=False, attachments=attachments or {})
    return MarkdownWithMath(renderer=renderer).render(source)


def markdown_html(source: str, attachments: dict | None = None) -> str:
    """A markdown cell as its page shows it: rendered, typeset, then cleaned (the last step)."""
    return clean(render_markdown(source, attachments))


def sanitized_page(page: str) -> str:
    """A finished HTML page, made safe as the last step: its head is the template's (no student
    text in it) without its scripts (nbconvert's links MathJax from a CDN), links and the files its
    styles name (bootstrap's fonts), and with the CSP; its body, everything from the notebook,
    passes nh3."""
    start, end = page.find("<body"), page.rfind("</body>")
    if start < 0 or end < start:
        raise ValueError("not an HTML page with a body")
    head = re.sub(r"<script\b.*?</script\s*>", "", page[:start], flags=re.S | re.I)
    head = re.sub(r"<link\b[^>]*>", "", head, flags=re.I)
    head = re.sub(r"url\(\s*(?![\"']?data:)[^)]*\)", "url(data:,)", head, flags=re.I)   # bootstrap's fonts
    if "<head>" not in head:
        raise ValueError("not an HTML page with a head")
    head = head.replace("<head>", f"<head>\n<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">", 1)
    body = page[page.index(">", start) + 1:end]
    return head + "<body>\n" + clean(body) + "\n</body>\n</html>\n"


def cut(text: str, limit: int) -> str:
    """At most ``limit`` characters of a student's text, and a note where it was cut."""
    if len(text) <= limit:
        return text
    return (text[:limit] + f"\n\n[cut here: the feedback page shows {limit:,} of the {len(text):,} characters "
            f"written here (at most {CELL_CHARS:,} a cell, {PAGE_CHARS:,} a page)]\n")


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
    return (f"<div class='course-feedback'>"
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
    """A whole page, for a submission nbgrader could not take (refused, unreadable) and for one whose
    page could not be made (the reason says why)."""
    title = html.escape(f"{result.get('notebook', '')} - {student}")
    return (f"<!doctype html><html><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\"><title>{title}</title>"
            f"<style>{CSS}</style></head><body>"
            + clean(summary_html(result, student, status=status, reason=reason)) + "</body></html>")


# ------------------------------------------------------------------ making the pages
#: limits of one page's generation: its own process, stopped past them
PAGE_SECONDS = 60
PAGE_MEMORY = 3 * 2**30      # bytes of address space (nbgrader and its imports take about 1 GB of it)


def make_pages(course, submissions: list, workers: int = 2, seconds: int = PAGE_SECONDS,
               memory: int = PAGE_MEMORY) -> dict:
    """nbgrader's feedback page of each (student, notebook), each made in a process of its own, forked
    from a server that has nbgrader imported once, and stopped past PAGE_SECONDS or PAGE_MEMORY: one
    page that fails or runs away (``seconds`` of CPU, twice that of wall-clock time, ``memory`` bytes of
    address space) costs that page alone. Returns {(student, notebook): (reason, what nbgrader said last)} for the
    pages that were not made: the reason is for the student's page, nbgrader's words for the instructor."""
    course = Path(course)

    def one(item):
        student, notebook = item
        page = course / "feedback" / student / notebook / f"{notebook}.html"
        try:
            done = nbgrader_runs.run("generate_feedback", notebook, "--student", student, "--force", course=course,
                                     check=False, timeout=2 * seconds, cpu_s=seconds, memory=memory)
        except subprocess.TimeoutExpired:
            return f"making it took longer than {2 * seconds} s", ""
        if done.returncode == 0 and page.is_file():
            return None
        lines = done.stdout.splitlines()
        said = [line.strip() for line in lines if re.match(r"\s*[\w.]+(Error|Exception|Invalid\w*): ", line)] \
            or [line for line in lines if "ERROR" in line]
        cause = f"stopped by signal {-done.returncode}" if done.returncode < 0 else f"exit code {done.returncode}"
        return f"nbgrader generate_feedback stopped on it ({cause})", said[-1][-300:] if said else ""

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        outcomes = dict(zip(submissions, pool.map(one, submissions)))
    return {item: outcome for item, outcome in outcomes.items() if outcome}
