"""Build the self-study book: ``python -m book.build`` (or ``make book``).

The lectures, the exercises, the README's guide for readers, data/README.md and the
bibliography are copied into ``_build/src/`` and adapted there, never in the committed
files: every displayed equation gets an anchor and every equation number cited in the
prose becomes a link to it (``book/equations.py``), "chapter 04" and
``exercises/04_forget_gate.ipynb`` become links, and each lecture ends with a link to its
exercise. Sphinx with MyST-NB (``book/conf.py``) then executes the lectures, caching the
outputs in ``_build/jupyter_cache`` by the code of each notebook (or shows the outputs of runs
handed to ``build``: the tests hand it the student release's), and writes the site to
``_build/html/``. A copy is rewritten only when its text changed, so a rebuild re-reads
only what was edited and runs no notebook whose code is unchanged.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
from pathlib import Path

import nbformat

from autograder import chapters
from book import equations
from course import book
from course.paths import ROOT

BUILD = ROOT / "_build"
RESULTS = ROOT / "bench" / "results"
SRC, HTML = BUILD / "src", BUILD / "html"
CACHE = BUILD / "jupyter_cache"                 # MyST-NB's execution cache (book/conf.py)
README_GUIDE = re.compile(r"\*\*Self-study readers\.\*\*.*?\n\n\|.*?\n(?=\n|\Z)", re.S)


class BookError(RuntimeError):
    """Something in the sources the book cannot be built from (named, with the fix)."""


def lectures():
    """The chapters' lectures, in the chapter manifest's order."""
    return [c.notebook("lectures") for c in chapters.load()]


def chapter_of(path: Path) -> str:
    return path.name[:2]


def title_of(nb) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^# (.+)$", cell.source, re.M)
            if m:
                return m[1].strip()
    raise BookError("a lecture has no '# title' heading in a markdown cell")


def inputs_version() -> str:
    """A digest of what the lectures' outputs depend on besides their own code: the course
    package, the bench results and the corpus. It goes into each lecture copy's kernelspec,
    which the execution cache hashes, so a change there re-executes the lectures."""
    digest = hashlib.sha256()
    for folder, pattern in (("course", "*.py"), ("bench/results", "**/*"), ("data/course", "*")):
        for path in sorted((ROOT / folder).glob(pattern)):
            if path.is_file():
                digest.update(path.relative_to(ROOT).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def write_if_changed(path: Path, text: str):
    """Keep the file's time stamp when nothing changed (Sphinx then skips it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


# ---------------------------------------------------------------- equations

def equation_targets(notebooks: dict):
    """key -> (chapter, anchor) of each equation's first display; chapter -> {key: anchor}."""
    first, per_chapter = {}, {}
    for chapter, nb in notebooks.items():
        mine = per_chapter.setdefault(chapter, {})
        for cell in nb.cells:
            if cell.cell_type != "markdown":
                continue
            for key in equations.displayed(cell.source, chapter):
                if key in mine:
                    raise BookError(f"lecture {chapter} displays {key[0]} eq {key[1]} twice; "
                                    "tag only one of the two displays")
                mine[key] = equations.anchor(key, None if key not in first else chapter)
                first.setdefault(key, (chapter, mine[key]))
    return first, per_chapter


def anchor_displays(markdown: str, chapter: str, mine: dict) -> str:
    """Put a MyST target line before every tagged display: ``(eq-t-59)=``."""
    def add(m):
        keys = [k for tag in equations.TAG.findall(m[0]) for k in equations.parse_tag(tag, chapter)]
        targets = "".join(f"({mine[k]})=\n" for k in keys)
        return f"\n\n{targets}{m[0]}\n"
    return re.sub(r"\$\$.*?\$\$", lambda m: add(m) if equations.TAG.search(m[0]) else m[0],
                  markdown, flags=re.S)


# ---------------------------------------------------------------- pages

def title_first(nb):
    """Move the markdown cell with the notebook's '# title' above the set-up code before it."""
    index = next(i for i, c in enumerate(nb.cells)
                 if c.cell_type == "markdown" and re.search(r"^# ", c.source, re.M))
    nb.cells.insert(0, nb.cells.pop(index))


def link_results(markdown: str) -> str:
    """`bench/results/converge.md` (or .json, or ptb.png) -> a link to the book's page of that
    table, where a reader checks the number (the JSON and the figures are shown on the .md page)."""
    def link(m):
        page = m[1] if (RESULTS / f"{m[1]}.md").exists() else None
        return f"[`bench/results/{m[1]}.{m[2]}`](../results/{page}.md)" if page else m[0]
    return re.sub(r"`bench/results/(\w+)\.(md|json|png)`", link, markdown)


def link_chapters(markdown: str, chapter: str, names: dict) -> str:
    """"chapter 04" -> a link to lecture 04; `exercises/05_gru.ipynb` -> a link to that page;
    a cited results file -> its page in the book."""
    markdown = re.sub(r"`exercises/(\d\d_\w+)\.ipynb`",
                      lambda m: f"[`exercises/{m[1]}.ipynb`](../exercises/{m[1]}.ipynb)", markdown)
    markdown = link_results(markdown)

    def chapter_link(m):
        other = m[2]
        if other == chapter or other not in names:
            return m[0]
        return f"[{m[1]} {other}]({names[other]}.ipynb)"
    out, at = [], 0
    for start, end, text in equations._prose(markdown):
        out.append(markdown[at:start])
        out.append(re.sub(r"\b([Cc]hapter) (\d\d)\b", chapter_link, text))
        at = end
    return "".join(out)


def lecture_page(path: Path, nb, targets, per_chapter, names, titles) -> tuple[str, list]:
    chapter = chapter_of(path)
    missing = []
    title_first(nb)
    nb.metadata.setdefault("kernelspec", {"name": "python3", "display_name": "Python 3"})
    nb.metadata.kernelspec["course_inputs"] = inputs_version()
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        text, unresolved = equations.link_citations(cell.source, chapter, targets, per_chapter[chapter])
        missing.extend(unresolved)
        text = anchor_displays(text, chapter, per_chapter[chapter])
        cell.source = link_chapters(text, chapter, names)
    exercise = ROOT / "exercises" / path.name
    if exercise.exists():
        nb.cells.append(nbformat.v4.new_markdown_cell(
            f"---\n\n**Exercise {chapter}:** [{path.stem}](../exercises/{path.name}), the graded "
            "notebook of this chapter (download it with the button at the top of its page and "
            "open it in Jupyter)."))
    return nbformat.writes(nb), missing


def exercise_page(path: Path, titles) -> str:
    nb = nbformat.read(path, as_version=4)
    chapter = chapter_of(path)
    title_first(nb)
    nb.cells.insert(1, nbformat.v4.new_markdown_cell(
        f"*The graded notebook of [{titles[chapter]}](../lectures/{path.name}), shown here without "
        "outputs. Download it (the button at the top of this page) and work in Jupyter: fill in "
        "the cells that raise `NotImplementedError`; the visible checks below them tell you "
        "whether you are on track. The first line of each answer cell names the lecture section "
        "it applies (in Jupyter, the link above the cell opens that lecture).*"))
    # in the book, that first line is also a link above the cell (raw HTML: the browser test checks it)
    for index in reversed(range(len(nb.cells))):
        for chapter, anchor in book.links_in(nb.cells[index].source)[:1]:
            nb.cells.insert(index, nbformat.v4.new_markdown_cell(
                f'*Your answer below applies <a href="../lectures/{chapter}.html#{anchor}">'
                f"this section of lecture {chapter[:2]}</a>.*"))
    return nbformat.writes(nb)


def index_page(titles, names, results=()) -> str:
    readme = (ROOT / "README.md").read_text()
    title = readme.splitlines()[0].lstrip("# ").strip()
    guide = README_GUIDE.search(readme)
    if not guide:
        raise BookError("README.md has no '**Self-study readers.**' paragraph followed by the "
                        "chapter table; the book's front page is made from it")
    # a reader's introduction (book/intro.md), then the README's chapter table
    text = (ROOT / "book" / "intro.md").read_text() + "\n| " + guide[0].split("\n| ", 1)[1]
    # the chapter table's rows become links to the chapters
    text = re.sub(r"^\| (\d\d) \| (.+?) \|$",
                  lambda m: f"| {m[1]} | [{m[2]}](lectures/{names[m[1]]}.ipynb) |"
                  if m[1] in names else m[0], text, flags=re.M)
    toc = lambda caption, docs: ("```{toctree}\n:caption: " + caption + "\n:maxdepth: 2\n:hidden:\n\n"
                                 + "\n".join(docs) + "\n```\n")
    exercises = [f"exercises/{names[c]}" for c in names if (ROOT / "exercises" / f"{names[c]}.ipynb").exists()]
    return (f"# {title}\n\n{text}\n"
            "The data page describes the course corpus; the bibliography lists the texts the "
            "lectures cite.\n\n"
            + toc("Lectures", [f"lectures/{names[c]}" for c in names])
            + toc("Exercises", exercises)
            + toc("Results", list(results))
            + toc("Reference", ["data", "lectures/bibliography"]))


def results_pages(src: Path) -> list:
    """Every table of bench/results/ as a page of the book, with its figures: the numbers the
    lectures cite, where a reader can check them. Returns the pages' names."""
    names = []
    for path in sorted(RESULTS.glob("*.md")):
        write_if_changed(src / "results" / path.name, path.read_text())
        names.append(f"results/{path.stem}")
    for figure in sorted(RESULTS.glob("*.png")):
        target = src / "results" / figure.name
        if not target.exists() or target.read_bytes() != figure.read_bytes():
            target.write_bytes(figure.read_bytes())
    return names


def data_page() -> str:
    return (ROOT / "data" / "README.md").read_text().replace("# Data", "# The data", 1)


def bibliography_page(path: Path = ROOT / "lectures" / "bibliography.md") -> str:
    """lectures/bibliography.md with its ``<a id="key"></a>`` anchors made Sphinx targets, so
    that the lectures' ``[Key](bibliography.md#key)`` resolve (and Sphinx checks them)."""
    if not path.exists():
        return ("# Bibliography\n\nThe texts the lectures cite: the tutorial chapter on recurrent "
                "neural network language models [T], the two versions of \"Long Short-Term Memory "
                "as a Dynamically Computed Element-wise Weighted Sum\" [WS], [WS2], \"Recurrent "
                "Additive Networks\" [RAN] and \"A Way out of the Odyssey\".\n")
    lines = []
    for line in path.read_text().splitlines():
        m = re.match(r'^(\s*(?:[-*]|\d+\.)?\s*)<a id="([^"]+)"></a>\s*', line)
        if m:
            lines += ["", f"({m[2]})=", line[:m.start(2) - len('<a id="')] + line[m.end():]]
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def assemble(src: Path = SRC) -> list:
    """Write the book's sources into ``src``; return the equation citations that resolve nowhere."""
    paths = lectures()
    if not paths:
        raise BookError("no lectures/NN_*.ipynb found")
    notebooks = {chapter_of(p): nbformat.read(p, as_version=4) for p in paths}
    names = {chapter_of(p): p.stem for p in paths}
    titles = {c: title_of(nb) for c, nb in notebooks.items()}
    targets, per_chapter = equation_targets(notebooks)
    missing = []
    for path in paths:
        text, unresolved = lecture_page(path, notebooks[chapter_of(path)], targets, per_chapter,
                                        names, titles)
        missing += [(chapter_of(path), key) for key in unresolved]
        write_if_changed(src / "lectures" / path.name, text)
    for path in (c.notebook("exercises") for c in chapters.load()):
        write_if_changed(src / "exercises" / path.name, exercise_page(path, titles))
    results = results_pages(src)
    write_if_changed(src / "index.md", index_page(titles, names, results))
    write_if_changed(src / "data.md", data_page())
    write_if_changed(src / "lectures" / "bibliography.md", bibliography_page())
    return missing


def cache_outputs(name: str, executed: Path):
    """Put the outputs of ``executed``, lectures/``name`` run elsewhere (the tests run each lecture
    once, in the student's release), into the execution cache under the code of the book's copy,
    so that MyST-NB shows them instead of running the lecture again."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    nb, ran = (nbformat.read(p, as_version=4) for p in (SRC / "lectures" / name, executed))
    mine, theirs = ([c for c in n.cells if c.cell_type == "code"] for n in (nb, ran))
    if [c.source for c in mine] != [c.source for c in theirs]:
        raise BookError(f"{executed} ran other code than lectures/{name}: run the lecture itself")
    for cell, run in zip(mine, theirs):
        cell.outputs, cell.execution_count = run.outputs, run.execution_count
    if "language_info" in ran.metadata:
        nb.metadata.language_info = ran.metadata.language_info
    # jupyter-cache checks that every code cell ran, in order (MyST-NB skips that for its own runs)
    get_cache(str(CACHE)).cache_notebook_bundle(CacheBundleIn(nb, str(executed)), overwrite=True)


def build(out: Path = HTML, jobs: str = "1", executed: dict | None = None) -> int:
    """The book into ``out``. ``executed``: lecture file name -> that lecture already executed
    elsewhere, whose outputs the book shows (cache_outputs); the other lectures are executed here."""
    missing = assemble()
    if missing:
        where = ", ".join(f"lecture {c}: {ns} eq {n}" for c, (ns, n) in missing)
        raise BookError(f"equations cited but displayed in no lecture ({where}); display them "
                        "with \\tag{...} or name the one they equal in book/equations.py SAME_AS")
    for name, path in (executed or {}).items():
        cache_outputs(name, path)
    from sphinx.cmd.build import build_main
    # the kernels draw inline, whatever backend the caller chose (pytest's conftest says Agg,
    # which would leave every figure out of the book)
    backend = os.environ.get("MPLBACKEND")
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    try:
        return build_main(["-b", "html", "-c", str(ROOT / "book"), "-d", str(BUILD / "doctrees"),
                           "-j", jobs, "-W", "--keep-going", "-q", str(SRC), str(out)])
    finally:
        if backend is None:
            os.environ.pop("MPLBACKEND")
        else:
            os.environ["MPLBACKEND"] = backend


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", "-j", default="1", help="Sphinx processes (notebooks run in parallel)")
    args = parser.parse_args(argv)
    try:
        status = build(jobs=args.jobs)
    except BookError as err:
        print(f"make book: {err}", file=sys.stderr)
        return 2
    if status == 0:
        print(f"The book is in {HTML.relative_to(ROOT)}/index.html")
    return status


if __name__ == "__main__":
    sys.exit(main())
