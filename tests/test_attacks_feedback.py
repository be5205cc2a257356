"""Attacks on the pages the instructor's tools make and on chapter 06's padding rule (issue 39,
cases 5, 6 and 8), run end to end through the real commands: ``python -m autograder.grade
autograde`` on a small class, then ``python -m autograder.grade feedback``.

* markup that the page's math typesetting used to turn live (`<span class="$x$<img ...>">`), and the
  same mechanism in code spans and links; links that nbconvert's ``files/`` rewriting would make
  `javascript:`; images, styles and scripts from elsewhere; an attachment whose data breaks out of
  its attribute: no page runs or loads any of it (formgrader's rendering included), and the page
  loads nothing from elsewhere, checked in the HTML and in Chromium offline;
* a missing attachment (nbconvert raised, and ``make feedback`` stopped for the class) and a page
  nbgrader cannot make: each student gets a page, the one that failed a
  page with the reason, and the command names it;
* 0.5 MB of ``$x$`` in one cell and more cells after it: the page is cut, says where, and is made
  within its limits;
* chapter 06: ``make_batch`` reached through getattr/importlib, a dict, a copy of its code: each
  scores what the plain call scores (4 of 7); the honest student keeps 7 of 7.
Every honest piece of work keeps full marks.
"""
import json
import re
import subprocess
import sys
import time
from html.parser import HTMLParser

import nbformat
import pytest

from autograder import feedback, grade
from autograder.cellmarks import marks
from tests.conftest import ROOT

pytestmark = pytest.mark.xdist_group("feedback-attacks")
GRU = ROOT / "autograder" / "samples" / "submissions" / "correct" / "05_gru.ipynb"   # a correct GRU: 5 / 5
PWNED = "document.title='pwned'"

MARKUP = [
    f"""<span class="$x$<img src=x onerror="{PWNED}">">the issue's attack</span>""",
    f"""A code span `$y$<img src=y onerror="{PWNED}">` and <code>$z$<img src=z onerror="{PWNED}"></code>""",
    f"""[a link]($x$" onmouseover="{PWNED}) and <a href="$q$" title="$r$<img src=q onerror={PWNED}>">m</a>""",
    "[files link](files/javascript:alert(1)) and <a href='files/javascript:alert(2)'>k</a>",
    "![tracker](https://tracker.example/t.png) <img src='https://tracker.example/u.png'>"
    "<link rel=stylesheet href='https://tracker.example/x.css'>"
    "<style>@import url(https://tracker.example/y.css)</style><script src='https://tracker.example/z.js'></script>",
    f"<math><mtext><table><mglyph><style><img src=x onerror=\"{PWNED}\">",
    "![attached](attachment:a.png)",
    "Honest math stays typeset: $h_t = (1 - z_t) \\odot h_{t-1} + z_t \\odot \\tilde h_t$",
]


def answer_notebook(chapter: str, answers: dict):
    """The exercise with the solution's answers (its solution markers dropped), ``answers`` replacing some."""
    solution = nbformat.read(ROOT / "solutions" / f"{chapter}.ipynb", as_version=4)
    code = {marks(c)["grade_id"]: "\n".join(line for line in c.source.splitlines() if "### " not in line)
            for c in solution.cells if marks(c).get("solution")}
    nb = nbformat.read(ROOT / "exercises" / f"{chapter}.ipynb", as_version=4)
    for cell in nb.cells:
        if marks(cell).get("solution"):
            cell.source = answers.get(marks(cell)["grade_id"], code[marks(cell)["grade_id"]])
    return nb


PAD_PLAIN = '''from course import data
def pad_batch(sentences, vocab):
    ids, _ = data.encode(sentences, vocab, max_unknown=1.0)
    b = data.make_batch(ids, vocab)
    return b.inputs, b.targets, b.masks'''
PAD_GETATTR = '''import importlib
def pad_batch(sentences, vocab):
    ids = [[vocab.index(w) for w in s] for s in sentences]
    b = getattr(importlib.import_module("course.data"), "make_" + "batch")(ids, vocab)
    return b.inputs, b.targets, b.masks'''
PAD_DICT = '''from course import data
TOOLS = {"tidy": data.make_batch}
def pad_batch(sentences, vocab):
    b = TOOLS["tidy"]([[vocab.index(w) for w in s] for s in sentences], vocab)
    return b.inputs, b.targets, b.masks'''
PAD_COPY = '''import types
from course import data as _d
_mine = types.FunctionType(_d.make_batch.__code__, vars(_d), "mine", (None,))
def pad_batch(sentences, vocab):
    b = _mine([[vocab.index(w) for w in s] for s in sentences], vocab)
    return b.inputs, b.targets, b.masks'''
PADDING = {"pads_honestly": None, "pads_with_make_batch": PAD_PLAIN, "pads_by_getattr": PAD_GETATTR,
           "pads_by_dict": PAD_DICT, "pads_by_code_copy": PAD_COPY}
GRU_STUDENTS = ["honest", "math_in_markup", "missing_attachment", "math_flood", "broken_page"]


def write_class(folder):
    for student in GRU_STUDENTS:
        nb = nbformat.read(GRU, as_version=4)
        if student == "math_in_markup":
            for text in MARKUP:
                nb.cells.append(nbformat.v4.new_markdown_cell(text))
            nb.cells[-2].attachments = {"a.png": {"image/png": f'x" onerror="{PWNED}'}}
            nb.cells.append(nbformat.v4.new_raw_cell(f"<script>{PWNED}</script><img src=x onerror=\"{PWNED}\">"))
        if student == "missing_attachment":
            nb.cells.append(nbformat.v4.new_markdown_cell("![y](attachment:a.png) the picture I meant to attach"))
        if student == "math_flood":
            nb.cells.append(nbformat.v4.new_markdown_cell("$x$ " * 125_000))            # 0.5 MB
            nb.cells += [nbformat.v4.new_markdown_cell("$y$ " * 8_000) for _ in range(12)]
        (folder / student).mkdir(parents=True)
        nbformat.write(nb, folder / student / "05_gru.ipynb", version=4)
    for student, pad in PADDING.items():
        nb = answer_notebook("06_minibatching", {"pad_batch": pad} if pad else {})
        (folder / student).mkdir(parents=True)
        nbformat.write(nb, folder / student / "06_minibatching.ipynb")


def run(*args, timeout=1800):
    return subprocess.run([sys.executable, "-m", "autograder.grade", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("attacks")
    write_class(tmp / "class")
    course = tmp / "course"
    autograded = run("autograde", str(tmp / "class"), "--course", str(course), "--workers", "2")
    assert autograded.returncode == 0, autograded.stdout + autograded.stderr
    # A page nbgrader cannot make, whatever the reason (here: its notebook in autograded/ unreadable)
    (course / "autograded" / "broken_page" / "05_gru" / "05_gru.ipynb").write_text("{ not a notebook")
    start = time.monotonic()
    pages = run("feedback", "--course", str(course))
    seconds = time.monotonic() - start
    return {"course": course, "records": {(r["student"], r["notebook"]): r for r in grade.load_records(course)},
            "feedback": pages, "seconds": seconds}


def page_of(graded, student, chapter="05_gru"):
    return (graded["course"] / "feedback" / student / chapter / f"{chapter}.html").read_text()


def test_honest_work_keeps_full_marks_and_each_route_to_make_batch_scores_as_the_plain_call(graded):
    scores = {key: r["score"] for key, r in graded["records"].items()}
    for student in GRU_STUDENTS:
        assert scores[(student, "05_gru")] == 5, (student, graded["records"][(student, "05_gru")])
    assert scores[("pads_honestly", "06_minibatching")] == 7
    for student in ("pads_with_make_batch", "pads_by_getattr", "pads_by_dict", "pads_by_code_copy"):
        record = graded["records"][(student, "06_minibatching")]
        assert record["score"] == 4, (student, record)
        assert "write the padding yourself" in json.dumps(record["cells"]), record


def test_make_feedback_gives_every_student_a_page_and_names_the_one_it_could_not_make(graded):
    pages = graded["feedback"]
    assert pages.returncode == 0, pages.stdout + pages.stderr
    assert "no feedback page for broken_page 05_gru" in pages.stderr, pages.stderr
    assert [line for line in pages.stderr.splitlines() if line.startswith("no feedback page")] == \
        [line for line in pages.stderr.splitlines() if "broken_page" in line and line.startswith("no feedback")]
    for (student, chapter), record in graded["records"].items():
        text = page_of(graded, student, chapter)
        assert f"feedback for {student}" in text and f"{record['score']:g} / {record['max_score']:g} points" in text
    broken = page_of(graded, "broken_page")
    assert "could not be made" in broken and "Traceback" not in broken and "5 / 5 points" in broken
    assert "the picture I meant to attach" in page_of(graded, "missing_attachment")


class Live(HTMLParser):
    """What a page would run or load, read as a browser's parser reads it (not text that mentions it)."""

    RUNS = {"script", "iframe", "object", "embed", "base", "form", "frame", "frameset", "applet"}

    def __init__(self, html: str):
        super().__init__()
        self.runs, self.loads = [], []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag in self.RUNS:
            self.runs.append(tag)
        if tag == "link" or (tag == "meta" and dict(attrs).get("http-equiv", "").lower() == "refresh"):
            self.loads.append(tag)
        for name, value in attrs:
            value = (value or "").strip().lower()
            if name.startswith("on") or value.startswith(("javascript:", "vbscript:")):
                self.runs.append(f"{tag} {name}={value[:40]}")
            if name in ("src", "srcset", "poster", "background", "data") and not value.startswith("data:image/"):
                self.loads.append(f"{tag} {name}={value[:40]}")


def css_loads(html: str) -> list:
    return re.findall(r"url\(\s*(?![\"']?data:)[^)]*\)|@import", html, re.I)


def test_no_page_runs_or_loads_the_students_markup(graded):
    """The feedback page and formgrader's rendering of the autograded notebook (nbconvert with the
    course's configuration): none of the markup is live, and nothing is loaded from elsewhere."""
    from nbconvert import HTMLExporter
    from traitlets.config.loader import PyFileConfigLoader
    course = graded["course"]
    page = page_of(graded, "math_in_markup")
    live = Live(page)
    assert live.runs == [] and live.loads == [] and css_loads(page) == [], (live.runs, live.loads, css_loads(page))
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert "<math" in page and "$x$" in page, "math typeset where it is math, left as text inside an attribute"
    assert "the issue's attack" in page and "Honest math stays typeset" in page
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    formgrader = HTMLExporter(config=config).from_filename(
        str(course / "autograded" / "math_in_markup" / "05_gru" / "05_gru.ipynb"))[0]
    student_part = formgrader[formgrader.index("<body"):]
    shown = Live(re.sub(r"<script\b.*?</script>", "", student_part, flags=re.S))    # the template's own scripts
    assert shown.runs == [], shown.runs
    assert [load for load in shown.loads if "tracker" in load] == [], shown.loads
    assert not [block for block in re.findall(r"<script\b.*?</script>", student_part, re.S) if PWNED in block]


def test_the_page_opens_offline_in_chromium_and_runs_nothing(graded):
    """Opened as a file with the network off, and again as HTML without its CSP: no request leaves
    the page, no script or handler runs (the title stays), the equations are MathML. A screenshot
    lands in runs/feedback-attacks/."""
    from tests.browser import offline_page
    course = graded["course"]
    page_file = course / "feedback" / "math_in_markup" / "05_gru" / "05_gru.html"
    shots = ROOT / "runs" / "feedback-attacks"
    shots.mkdir(parents=True, exist_ok=True)
    with offline_page() as browser:
        requests = []
        browser.on("request", lambda request: requests.append(request.url))
        browser.goto(page_file.as_uri())
        browser.mouse.move(300, 300)
        browser.screenshot(path=str(shots / "math_in_markup.png"), full_page=True)
        seen = browser.evaluate("""() => ({title: document.title, math: document.querySelectorAll('math').length,
            handlers: Array.from(document.querySelectorAll('*')).filter(
                e => Array.from(e.attributes).some(a => a.name.startsWith('on'))).length,
            scripts: document.querySelectorAll('script').length})""")
        assert requests == [page_file.as_uri()], requests
        assert seen["title"] != "pwned" and seen["handlers"] == 0 and seen["scripts"] == 0, seen
        assert seen["math"] >= 2, seen
        requests.clear()
        browser.set_content(re.sub(r"<meta http-equiv='Content-Security-Policy'[^>]*>", "", page_file.read_text()))
        assert requests == [] and browser.evaluate("document.title") != "pwned"


def test_a_flood_of_math_is_cut_and_the_page_made_within_its_limits(graded):
    """0.5 MB of `$x$` took 90 s and 1.2 GB to typeset: now each cell shows CELL_CHARS characters
    and the page PAGE_CHARS, with a note where it was cut."""
    page = page_of(graded, "math_flood")
    assert page.count("cut here") >= 2, "the long cell and the cells past the page's budget say so"
    assert f"of the {125_000 * 4:,} characters" in page
    assert len(page.encode()) < 3_000_000
    assert page.count("<math") <= feedback.CELL_EQUATIONS * (feedback.PAGE_CHARS // feedback.CELL_CHARS + 2)
    assert graded["seconds"] < 600, graded["seconds"]


def test_a_page_that_runs_out_of_memory_fails_with_a_reason(graded):
    """The limits are the child's: a page made with too little memory fails, with a reason, and the
    next one is made as usual."""
    course = graded["course"]
    failed = feedback.make_pages(course, [("honest", "05_gru")], memory=64 * 2**20)
    assert "nbgrader generate_feedback stopped" in failed[("honest", "05_gru")][0], failed
    assert feedback.make_pages(course, [("honest", "05_gru")]) == {}
    assert "feedback for honest" in page_of(graded, "honest")
