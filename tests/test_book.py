"""The self-study book: built from the lectures, executed, and checked in a real browser.

* every equation number cited in a lecture resolves to a displayed equation (no build needed);
* every answer cell of the exercises links to its lecture, and the anchor exists in the book;
* `book/build.py` builds the book with no Sphinx warning, showing every lecture executed: each
  code cell ran and none raised (what tests/test_notebooks.py checks of a lecture). The lectures
  are executed once per test run, in the student's release on DyNet 2.1 (tests/student.py), and
  those runs are what the book shows and what tests/test_student_release.py checks;
* in headless Chromium every page loads without a console error, its math is typeset by
  MathJax (no raw `$$`, no MathJax error), its images have loaded, and every internal link
  leads to a page and an id that exist. Screenshots land in runs/book/.

Chromium comes from Debian (`apt-get install -y chromium`), driven by Playwright for Python.
"""
import functools
import http.server
import re
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import nbformat
import pytest

from autograder import chapters
from autograder.cellmarks import marks
from course import book
from tests.browser import CHROMIUM
from tests.conftest import ROOT
from tests.student import BOOK_DYNET, lecture_run, student_on

from book import build, equations

pytestmark = pytest.mark.xdist_group("book")
SHOTS = ROOT / "runs" / "book"


def lecture_notebooks():
    return {build.chapter_of(p): nbformat.read(p, as_version=4) for p in build.lectures()}


# ---------------------------------------------------------------- equations (no build)

def test_citations_are_read_with_their_namespace():
    text = "[T] eqs 47-49 and 54-55; [RAN] eq 8, eq 59 and (D3); their eq 6; `eq 1` $eq 2$"
    found = [[(piece, keys) for piece, keys in pieces] for _, _, pieces in equations.citations(text, "07")]
    assert found == [
        [("[T] eqs 47-49", [("T", "47"), ("T", "48"), ("T", "49")]),
         ("54-55", [("T", "54"), ("T", "55")])],
        [("[RAN] eq 8", [("RAN", "8")])],
        [("eq 59", [("T", "59")])],
        [("their eq 6", [("O", "6")])],
        [("(D3)", [("D", "3")])],
    ]
    assert equations.parse_tag("[WS] 11 = [WS2] 9", "08") == [("WS", "11"), ("WS2", "9")]
    assert equations.parse_tag("5", "08") == [("WS", "5")]


def test_a_citation_without_a_display_is_reported():
    targets = {("T", "59"): ("05", "eq-t-59")}
    text, missing = equations.link_citations("eq 59 and eq 60", "06", targets, {})
    assert text == "[eq 59](#eq-t-59) and eq 60"
    assert missing == [("T", "60")]


def test_every_equation_cited_in_a_lecture_is_displayed():
    notebooks = lecture_notebooks()
    targets, per_chapter = build.equation_targets(notebooks)
    unresolved, cited = [], 0
    for chapter, nb in notebooks.items():
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cited += sum(1 for _ in equations.citations(cell.source, chapter))
                _, missing = equations.link_citations(cell.source, chapter, targets, per_chapter[chapter])
                unresolved += [f"lecture {chapter}: {ns} eq {n}" for ns, n in missing]
    assert cited > 50, "the lectures' equation citations were not found"
    assert not unresolved, f"cited but displayed nowhere: {unresolved}"


def test_bibliography_anchors_become_targets(tmp_path):
    source = tmp_path / "bibliography.md"
    source.write_text('# Bibliography\n\n- <a id="ran"></a>Recurrent additive networks.\n'
                      '<a id="ws"></a>**[WS]** Weighted sum.\n')
    page = build.bibliography_page(source)
    assert "(ran)=\n- Recurrent additive networks." in page
    assert "(ws)=\n**[WS]** Weighted sum." in page and "<a id" not in page
    assert "Bibliography" in build.bibliography_page(tmp_path / "missing.md")   # the placeholder


# ---------------------------------------------------------------- exercise stubs (no build)

def answer_cells(folder):
    for path in (c.notebook(folder) for c in chapters.load()):        # the chapter manifest
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code" and marks(cell).get("solution"):
                yield path, cell


@pytest.mark.parametrize("folder", ["solutions", "exercises"])
def test_every_answer_cell_links_to_its_lecture(folder):
    cells = list(answer_cells(folder))
    assert cells, f"no answer cells in {folder}/"
    for path, cell in cells:
        links = book.links_in(cell.source)
        assert len(links) == 1, f"{folder}/{path.name} {marks(cell)['grade_id']}: " \
                                f"{len(links)} book links, expected one"
        chapter, anchor = links[0]
        assert chapter == path.stem and anchor, f"{path.name} links to {chapter}#{anchor}"
        if folder == "solutions":     # outside the solution, so the student's copy keeps it
            solution = re.search(r"### BEGIN SOLUTION.*?### END SOLUTION", cell.source, re.S)
            assert solution is None or "# The lecture:" not in solution[0]


def test_lecture_url():
    assert book.lecture_url("05_gru", "eq-t-59") == "/services/book/lectures/05_gru.html#eq-t-59"
    assert book.links_in("# The lecture: ../lectures/05_gru.ipynb, eq 59\n") == [("05_gru", "eq-t-59")]
    assert book.links_in('# The lecture: ../lectures/08_weighted_sum.ipynb, [RAN] eq 8') == [("08_weighted_sum", "eq-ran-8")]
    assert book.links_in('# The lecture: ../lectures/05_gru.ipynb, section "1. Eq 59 is a weighted average"') == \
        [("05_gru", "eq-59-is-a-weighted-average")]
    with pytest.raises(ValueError, match="05_gru"):
        book.lecture_url("gru")


# ---------------------------------------------------------------- the built book

@pytest.fixture(scope="module")
def release_runs(tmp_path_factory):
    """Each lecture file name -> its run in the student's release on DyNet 2.1, where it ran to the
    end (each run once per test run, by this worker or the other: tests/student.py)."""
    student = student_on(tmp_path_factory, BOOK_DYNET)
    # the last chapter first, passing any the other worker is running (its release tests take the
    # longest first, then from the first chapter), then those passed: the two meet in the middle
    names = [path.name for path in reversed(build.lectures())]
    runs = {name: lecture_run(tmp_path_factory, student, name, wait=False) for name in names}
    runs = {name: ran or lecture_run(tmp_path_factory, student, name) for name, ran in runs.items()}
    return {name: ran / name for name, ran in runs.items() if (ran / name).exists()}


@pytest.fixture(scope="module")
def built(release_runs):
    """Build the book into _build/, showing the release's runs of the lectures (a lecture that
    failed there is executed by the build, which then fails with its error)."""
    status = build.build(executed=release_runs)
    assert status == 0, "the book did not build: see the Sphinx messages above"
    return build.HTML


class _Ids(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.hrefs = set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.hrefs.append(attrs["href"])


@functools.lru_cache(maxsize=None)
def parsed(path: Path) -> _Ids:
    parser = _Ids()
    parser.feed(path.read_text())
    return parser


@pytest.mark.notebook
def test_every_lecture_ran_without_an_error(built, release_runs):
    """What tests/test_notebooks.py asks of a lecture, from the execution the book shows: the
    student release's on DyNet 2.1."""
    from jupyter_cache import get_cache
    cache = get_cache(build.CACHE)
    for path in build.lectures():
        # the cached run of this very code (a lecture whose code changed has no match)
        record = cache.match_cache_notebook(nbformat.read(build.SRC / "lectures" / path.name, as_version=4))
        nb = cache.get_cache_bundle(record.pk).nb
        code = [c for c in nb.cells if c.cell_type == "code"]
        original = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        assert [c.source for c in code] == original, f"{path.name}: the book ran other code"
        assert code and all(c.execution_count for c in code), f"{path.name}: a cell did not run"
        errors = [o for c in code for o in c.outputs if o.output_type == "error"]
        assert not errors, f"{path.name}: {errors[0]['ename']}: {errors[0]['evalue']}"
        # and the run the book shows is the release's, not one of its own
        assert record.uri == str(release_runs.get(path.name)), f"{path.name}: the book ran it again"


@pytest.mark.notebook
def test_every_page_is_built_with_its_links(built):
    pages = {p.relative_to(built).as_posix() for p in built.rglob("*.html")}
    for path in build.lectures():
        assert f"lectures/{path.stem}.html" in pages
        assert f"exercises/{path.stem}.html" in pages or not (ROOT / "exercises" / path.name).exists()
    assert {"index.html", "data.html", "lectures/bibliography.html"} <= pages
    lecture05 = parsed(built / "lectures" / "05_gru.html")
    assert "eq-t-59" in lecture05.ids and "#eq-t-59" in lecture05.hrefs     # an equation and its citation
    assert "../exercises/05_gru.html" in lecture05.hrefs
    assert "04_forget_gate.html" in lecture05.hrefs                          # "chapter 04"
    # every results table a lecture cites is a page, and the citation links to it
    cited = {m for path in build.lectures() for m in re.findall(r"bench/results/(\w+)\.(?:md|json|png)", path.read_text())}
    assert cited and all(f"results/{name}.html" in pages for name in cited if (build.RESULTS / f"{name}.md").exists())
    assert "../results/converge.html" in lecture05.hrefs
    index = (built / "index.html").read_text()
    assert "Who it is for" in index and "results/converge.html" in index
    exercise05 = parsed(built / "exercises" / "05_gru.html")
    assert "../lectures/05_gru.html#eq-t-56" in exercise05.hrefs                # the answer cell's link


@pytest.mark.notebook
def test_every_table_a_lecture_displays_is_a_table(built):
    """A cell's displayed Markdown is rendered as MyST: in CommonMark a table stays a paragraph of pipes."""
    for page in (built / "lectures").glob("*.html"):
        assert "<p>| " not in page.read_text(), f"{page.name}: a displayed table shows as its Markdown source"
    assert re.search(r"<th[^>]*>(<p>)?tokens trained", (built / "lectures" / "10_capstone.html").read_text())


@pytest.mark.notebook
def test_every_anchor_linked_from_an_exercise_exists(built):
    for _, cell in answer_cells("solutions"):
        for chapter, anchor in book.links_in(cell.source):
            page = built / "lectures" / f"{chapter}.html"
            assert page.exists(), f"no page {page.name}"
            assert anchor in parsed(page).ids, f"{chapter}.html has no #{anchor}: fix the link " \
                                               "in the answer cell or the heading it names"


@pytest.mark.notebook
def test_every_section_a_feedback_page_sends_a_student_to_exists(built):
    """Each check's "reread" link (autograder/feedback.py) lands on a heading or equation."""
    from autograder.reference.grading import all_checks
    for name, check in all_checks().items():
        stem, where = check.lecture
        anchor = book.anchor(stem, where)
        assert anchor in parsed(built / "lectures" / f"{stem}.html").ids, \
            f"{name}: lecture {stem} has no #{anchor} for {where!r}"


# ---------------------------------------------------------------- in the browser

@pytest.fixture(scope="module")
def site(built):
    """The built book served at /services/book/, as on the hub (`python -m course.book`)."""
    handler = functools.partial(_QuietHandler, directory=str(built))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}{book.BOOK_ROOT}"
    server.shutdown()


class _QuietHandler(book.book_handler()):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser():
    playwright = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.fail("no chromium: `make test` installs it as root, or `sudo apt-get install chromium`")
    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


# On a busy machine a page was once checked before it had finished loading (57 of its 59 math
# elements in the document, MathJax's deferred script not yet run: none typeset). So the check waits
# (up to a minute) for the document to be complete and, on a page with math, for MathJax to start,
# then for its typesetting.
MATHJAX_DONE = """
  const deadline = Date.now() + 60000;
  const started = () => window.MathJax && MathJax.startup && MathJax.startup.promise;
  while ((document.readyState !== 'complete' || (document.querySelector('div.math, span.math') && !started()))
         && Date.now() < deadline) {
    await new Promise(resolve => setTimeout(resolve, 100));
  }
  if (window.MathJax && MathJax.startup) { await MathJax.startup.promise; }
"""
CHECK_PAGE = """async () => {""" + MATHJAX_DONE + """
  const article = document.querySelector('main') || document.body;
  const text = Array.from(article.querySelectorAll('p, li, td, th, div.math, span.math'))
                    .map(e => e.innerText).join('\\n');
  return {
    mathjax: !window.MathJax ? 'absent' : MathJax.startup ? 'started' : 'configured, its script not run',
    math: article.querySelectorAll('div.math, span.math').length,
    typeset: article.querySelectorAll('mjx-container').length,
    mathErrors: article.querySelectorAll('mjx-merror').length,
    rawMath: (text.match(/\\$\\$|\\\\\\[|\\\\begin\\{/g) || []).length,
    images: Array.from(article.querySelectorAll('img')).map(i => [i.currentSrc, i.complete && i.naturalWidth > 0]),
  };
}"""


TABS = 4     # pages loaded side by side: each page's wait for a quiet network (half a second) overlaps the others'


def watched_tab(browser, problems: list):
    """A new tab whose console errors, page errors, failed and refused requests go into ``problems``."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("console", lambda m: m.type == "error"
            and problems.append(f"{page.url}: console: {m.text} ({m.location.get('url')})"))
    page.on("pageerror", lambda e: problems.append(f"{page.url}: {e}"))
    page.on("requestfailed", lambda r: r.failure != "net::ERR_ABORTED"      # left by a navigation
            and problems.append(f"{page.url}: failed to load {r.url}: {r.failure}"))
    page.on("response", lambda r: r.status >= 400 and problems.append(f"{page.url}: {r.status} {r.url}"))
    return page


@pytest.mark.notebook
def test_every_page_in_the_browser(built, site, browser):
    problems = []
    tabs = [watched_tab(browser, problems) for _ in range(TABS)]
    pages = sorted(p.relative_to(built).as_posix() for p in built.rglob("*.html")
                   if not p.relative_to(built).as_posix().startswith("_"))   # not the theme's parts
    seen_math = seen_images = 0
    for first in range(0, len(pages), TABS):
        batch = list(zip(tabs, pages[first:first + TABS]))
        for tab, name in batch:
            tab.goto(site + name, wait_until="commit")
        for tab, name in batch:
            tab.wait_for_load_state("networkidle")     # its scripts, styles, images and fonts all loaded
            state = tab.evaluate(CHECK_PAGE)
            assert state["typeset"] >= state["math"], f"{name}: {state['math']} math elements, " \
                f"{state['typeset']} typeset by MathJax (MathJax {state['mathjax']}; the page's problems: {problems})"
            assert not state["mathErrors"], f"{name}: {state['mathErrors']} MathJax errors"
            assert not state["rawMath"], f"{name}: raw TeX left in the text"
            broken = [src for src, ok in state["images"] if not ok]
            assert not broken, f"{name}: images not loaded: {broken}"
            seen_math += state["math"]
            seen_images += len(state["images"])
            for href in parsed(built / name).hrefs:
                target = urljoin(site + name, href)
                if not target.startswith(site):
                    continue                                # external (none expected) or a file URL
                parts = urlsplit(target)
                path = built / (parts.path[len(urlsplit(site).path):] or "index.html")
                assert path.exists(), f"{name}: link to a missing page {href}"
                if parts.fragment and path.suffix == ".html":
                    assert parts.fragment in parsed(path).ids, f"{name}: link to a missing anchor {href}"
    assert not problems, "\n".join(problems)
    assert seen_math > 100 and seen_images > 20, "the book has too little math or too few figures"
    for tab in tabs:
        tab.close()


@pytest.mark.notebook
def test_screenshots(built, site, browser):
    """Three pages as a reader sees them: equations, a heatmap, a table (runs/book/)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    shots = {
        "equations": ("lectures/05_gru.html", "h1"),                   # the GRU's eqs 56-59
        "heatmap": ("lectures/05_gru.html", ".cell_output img >> nth=-1"),
        "table": ("lectures/08_weighted_sum.html", "#what-the-papers-measured table >> nth=2"),
    }
    for name, (url, selector) in shots.items():
        page.goto(site + url, wait_until="networkidle")
        page.evaluate("async () => {" + MATHJAX_DONE + "}")
        page.locator(selector).first.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.evaluate("window.scrollBy(0, -80)")                         # below the sticky header
        page.screenshot(path=str(SHOTS / f"{name}.png"))
        assert (SHOTS / f"{name}.png").stat().st_size > 10_000
    page.close()
