"""Every number a lecture's Markdown states is one the lecture prints, or is not a measurement.

A lecture's prose drifts from its numbers when a measured value is typed beside the cell that
measures it. Here every number in a Markdown cell of lectures/ must be one of:

* an equation, section, figure, chapter or lecture number, or a citation (author and year,
  "[14]", "[RAN] eq 8"): removed with the math ($...$: the equations are checked against the
  seeds elsewhere), inline code and link targets before the numbers are read;
* a setting of the lecture's own code: a number written as a literal in one of its code cells
  (``train[:600]``, ``embed=32``). If the code changes, the prose must follow. A ratio or a
  share ("1.35x", "55%") is never a setting: it must be printed;
* a constant of the set-up that no cell prints, listed in CONSTANTS below with its reason;
* a value the same lecture prints (its outputs: printed text, Markdown from
  ``course.claims.claim``, tables), at the precision the Markdown writes it.

Words that summarise numbers ("about two epochs", "three times faster") are not numbers a
regular expression can match against outputs: they are made with ``course.claims`` in a cell
(which checks them when the lecture runs) or listed in WORDS with their reason.

The lectures are executed once per run, by the book's build (tests/test_book.py, the same xdist
group, so this file runs after it on the same worker and pays nothing to build it again): their
outputs are the book's cached run of each lecture's very code (a lecture whose code changed since has
no match, and is executed here). A cell that raises, a failed ``claim`` included, fails the book's
build and this file's test of that lecture; the Markdown is read statically from lectures/.
"""
from __future__ import annotations

import copy
import functools
import re

import nbformat
import pytest

from autograder import chapters
from autograder.notebook_runner import execute, first_error
from course import claims
from tests.conftest import ROOT

LECTURES = [c.notebook("lectures") for c in chapters.load()]     # the chapter manifest
pytestmark = pytest.mark.xdist_group("book")      # after the book's build, which executes the lectures

#: numbers the Markdown may state though no cell prints them: {chapter: {number: reason}}
CONSTANTS: dict[str, dict[str, str]] = {
    "01": {"10,000": "the Penn Treebank's vocabulary size, a property of that data set (Mikolov's preprocessing)"},
    "02": {"95%": "the confidence level of bench/converge.md's intervals, a setting of that bench"},
    "03": {"95%": "the confidence level of bench/converge.md's and samples.md's intervals, a setting of those benches",
           "2,000": "bench/samples.py's sentences per row, a setting of that bench (samples.md states it)",
           "1.3": "one of bench/samples.py's temperatures, a setting of that bench (samples.md states it)"},
    "04": {"64": "the number of sentences evaluation.gradient_profile averages over (its default n), a setting"},
    "05": {"3.13": "a Python version, naming the platform where dyNET38 2.2 is the DyNet"},
    "06": {"128": "the tutorial's (section 6.5) usual range of minibatch sizes, 1 to 128 sentences",
           "50": "an illustration: a sentence of 5 and one of 50 words in one batch"},
    "09": {"50%": "a quotation of the RAN paper's set-up (\"50% dropout ... using variational dropout\")"},
}

#: words that summarise numbers, allowed where the number is a definition, not a measurement:
#: {chapter: {phrase: reason}}
WORDS: dict[str, dict[str, str]] = {
    "03": {"at most one": "a bound of eq 50, not a measurement: i_t in (0, 1) times a tanh in (-1, 1)"},
}

#: sections that quote a paper's published numbers (citations, checked against the papers by a
#: reader, not by a cell): {chapter: {heading: reason}}
QUOTED: dict[str, dict[str, str]] = {
    "08": {"## 5. What the papers measured": "the tables of [WS], [WS2] and [RAN], quoted as published"},
}

# ---------------------------------------------------------------- reading the Markdown

MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$|\\begin\{(\w+\*?)\}.*?\\end\{\1\}", re.S)
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
LINK_TARGET = re.compile(r"\]\([^)]*\)")
HTML = re.compile(r"<[^>\n]+>")
ENUMERATION = re.compile(r"^(\s*(?:#+\s+)?)\d+(?:\.\d+)*\s*[.·](?=\s)", re.M)   # "## 2. ...", "# 04 · ...", "1. item"
REFERENCE = re.compile(r"""(?ix)
    \b(?:eqs?|equations?|sections?|figures?|fig\.|tables?|chapters?|lectures?|exercises?|seeds?|references?
       |footnotes?|steps?)\.?\s+[A-Z]?\d+(?:\.\d+)*(?:\s*(?:[-–,]|and|to)\s*[A-Z]?\d+(?:\.\d+)*)*
  | \[[A-Z][\w+ -]*\]\s*(?:eqs?\.?\s*)?[A-Z]?\d+(?:\.\d+)*
       (?:\s*(?:[-–,]|and|to)\s*[A-Z]?\d+(?:\.\d+)*)*                   # [RAN] eq 8, [WS] 11, [T] eqs 47-49 and 54-55
  | \(\s*[A-Z]\d+\s*\)                                             # (D3)
  | \[\d+\]                                                        # the tutorial's reference [14]
  | \b[^\W\d_][^\W\d_]+(?:\s+et\s+al\.?)?,?\s+(?:19|20)\d\d[a-z]?\b  # Shi 2016, Józefowicz 2016
  | \b(?:Res-V|V)\d\b
""")
#: a number standing alone ("600", "1,527", "23.85"), with a ratio or share suffix ("1.35x", "55%")
NUMBER = re.compile(r"(?<![\w.\-/^_])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?([x×%])?(?![\w])")
NUMBER_WORD = (r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|a hundred|a thousand"
               r"|half|a half|a third|a quarter|a fifth|a sixth|a tenth")
#: approximate or comparative number words: "about two epochs", "three times faster", "twice as fast"
SUMMARY = re.compile(rf"""(?ix)\b(?:
    (?:about|roughly|nearly|almost|approximately|at\s+most|at\s+least|more\s+than|less\s+than
       |fewer\s+than)\s+(?:{NUMBER_WORD})\b
  | (?:{NUMBER_WORD})\s+times\s+(?:faster|slower|more|fewer|less|as|larger|smaller|wider)\b
  | (?:twice|half)\s+as\s+\w+
)""")


def prose(markdown: str) -> str:
    """The Markdown without what holds numbers that are not claims: math, code, link targets,
    HTML, enumerations, and references to equations, sections, chapters and papers."""
    text = MATH.sub(" ", markdown)
    text = CODE.sub(" ", text)
    text = LINK_TARGET.sub("]", text)
    text = HTML.sub(" ", text)
    text = ENUMERATION.sub(r"\1", text)
    return REFERENCE.sub(" ", text)


def markdown_numbers(markdown: str):
    """(number as written, context) for every number of the prose."""
    text = prose(markdown)
    for m in NUMBER.finditer(text):
        yield m[0], " ".join(text[max(0, m.start() - 60):m.end() + 30].split())


def value(written: str) -> tuple[float, int]:
    """ "1,527" -> (1527.0, 0); "23.85" -> (23.85, 2); a suffix (x, %) dropped."""
    digits = written.rstrip("x×%").replace(",", "")
    return float(digits), len(digits.split(".")[1]) if "." in digits else 0


# ---------------------------------------------------------------- what the lecture prints

OUTPUT_NUMBER = re.compile(r"(?<![\w.])-?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:e[-+]?\d+)?([x×%])?")


def output_text(nb) -> str:
    """Everything the executed notebook shows as text: printed lines, Markdown and HTML
    displays (a claim, a table), the plain text of a result."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                parts.append(out.get("text", ""))
            for kind in ("text/markdown", "text/html", "text/plain"):
                if kind in out.get("data", {}):
                    parts.append(out["data"][kind])
    return "\n".join(parts)


def kind(suffix: str) -> str:
    """What a number is: a ratio ("1.35x"), a share ("55%") or a plain number."""
    return {"x": "ratio", "×": "ratio", "%": "share"}.get(suffix or "", "")


def printed_numbers(nb) -> list[tuple[float, int, str]]:
    """(value, decimals, kind) of every number the executed notebook shows."""
    return [(float(m[0].rstrip("x×%").replace(",", "")), len(m[2]) - 1 if m[2] else 0, kind(m[3]))
            for m in OUTPUT_NUMBER.finditer(output_text(nb))]


def code_literals(nb) -> set[float]:
    """Numbers written in the lecture's code cells: its settings."""
    found = set()
    for cell in nb.cells:
        if cell.cell_type == "code":
            for m in re.finditer(r"(?<![\w.])(\d[\d_]*)(\.\d+)?(?:e-?\d+)?", cell.source):
                found.add(float(m[0].replace("_", "")))
    return found


def is_printed(written: str, printed: list[tuple[float, int, str]]) -> bool:
    """A printed value that, rounded to the decimals the Markdown writes, is that number; a
    ratio or a share must be printed as one ("1x" is not any printed 1)."""
    (number, decimals), wanted = value(written), kind(written[-1] if written[-1] in "x×%" else "")
    return any(d >= decimals and round(v, decimals) == number and (not wanted or k == wanted)
               for v, d, k in printed)


def sections(markdown: str) -> list[tuple[str, str]]:
    """(heading, text) of each part of a Markdown cell, split at its headings ("" before the first)."""
    parts = re.split(r"^(#+ .*)$", markdown, flags=re.M)
    return [("", parts[0])] + [(parts[i].strip(), parts[i] + parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def unsupported(nb, chapter: str) -> list[str]:
    """Each number or summarising word of the Markdown that the lecture neither prints nor
    sets, nor CONSTANTS/WORDS allow: "cell 5: '1x' in '...'"."""
    printed, literals = printed_numbers(nb), code_literals(nb)
    constants, words = CONSTANTS.get(chapter, {}), WORDS.get(chapter, {})
    problems = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        checked = "".join(text for heading, text in sections(cell.source) if heading not in QUOTED.get(chapter, {}))
        for written, context in markdown_numbers(checked):
            is_setting = written[-1] not in "x×%" and value(written)[0] in literals
            if not (written in constants or is_setting or is_printed(written, printed)):
                problems.append(f"cell {index}: {written!r} in '...{context}...'")
        for m in SUMMARY.finditer(prose(checked)):
            if m[0].lower() not in words:
                problems.append(f"cell {index}: {m[0]!r} (a summary of numbers: make it with course.claims "
                                "in a cell)")
    return problems


# ---------------------------------------------------------------- the lectures, executed once

@functools.lru_cache(maxsize=1)
def book_cache():
    """The book's execution cache, the book built first (at once when tests/test_book.py built it)."""
    from jupyter_cache import get_cache
    from book import build
    assert build.build() == 0, "the book did not build (a lecture failed?): see the Sphinx messages above"
    return get_cache(build.CACHE)


@functools.lru_cache(maxsize=None)
def executed(path):
    """The lecture with the outputs of its run: the book's (its code cells are the lecture's, in
    order; the book changes only Markdown), or a run of its own when the cache has none."""
    from book import build
    nb = nbformat.read(path, as_version=4)
    try:
        record = book_cache().match_cache_notebook(nbformat.read(build.SRC / "lectures" / path.name, as_version=4))
    except KeyError:
        nb, _, error = execute(path)
        return nb, error
    ran = [c for c in book_cache().get_cache_bundle(record.pk).nb.cells if c.cell_type == "code"]
    mine = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.source for c in mine] == [c.source for c in ran], f"{path.name}: the book's code differs"
    for cell, run in zip(mine, ran):
        cell.outputs = run.outputs
    return nb, None


def chapter(path) -> str:
    return path.name[:2]


def test_every_chapter_s_lecture_is_read():
    """Every chapter's lecture, and no numbered lecture outside the manifest."""
    on_disk = sorted(p.name for p in (ROOT / "lectures").glob("[0-9][0-9]_*.ipynb"))
    assert [p.name for p in LECTURES] == on_disk, "lectures/ and autograder/chapters.toml disagree"


@pytest.mark.notebook
@pytest.mark.parametrize("path", LECTURES, ids=[p.stem for p in LECTURES])
def test_every_number_of_the_prose_is_printed_or_a_setting(path):
    nb, error = executed(path)
    assert error is None, f"{path.name} failed (a claim its numbers no longer support?):\n{error}"
    problems = unsupported(nb, chapter(path))
    assert not problems, (f"{path.name}: numbers in the Markdown that no cell prints or sets; print them "
                          "from a cell (course.claims.claim), or list a set-up constant in CONSTANTS "
                          "with its reason:\n" + "\n".join(problems))


def test_every_listed_constant_is_still_used():
    """A constant the Markdown no longer states is a stale entry: remove it."""
    for path in LECTURES:
        nb = nbformat.read(path, as_version=4)
        stated = {w for c in nb.cells if c.cell_type == "markdown" for w, _ in markdown_numbers(c.source)}
        phrases = {m[0].lower() for c in nb.cells if c.cell_type == "markdown" for m in SUMMARY.finditer(prose(c.source))}
        assert not set(CONSTANTS.get(chapter(path), {})) - stated, f"{path.name}: stale CONSTANTS"
        assert not set(WORDS.get(chapter(path), {})) - phrases, f"{path.name}: stale WORDS"
    for chapter_, headings in QUOTED.items():
        path = next(p for p in LECTURES if chapter(p) == chapter_)
        found = {h for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"
                 for h, _ in sections(c.source)}
        assert not set(headings) - found, f"{path.name}: stale QUOTED"


# ---------------------------------------------------------------- a planted false sentence

@pytest.mark.notebook
def test_a_planted_false_sentence_fails():
    """Lecture 00 with sentences planted in a copy of its executed notebook: a measured-looking
    number no cell prints, a ratio, and a summarising word; each is reported, the rest is not."""
    path = ROOT / "lectures" / "00_dynet_primer.ipynb"
    nb, error = executed(path)
    assert error is None
    assert unsupported(nb, "00") == []
    planted = copy.deepcopy(nb)
    planted.cells.append(nbformat.v4.new_markdown_cell(
        "One batch took 6.76 ms and was 1x faster; the model sees about two epochs."))
    problems = unsupported(planted, "00")
    where = len(planted.cells) - 1
    assert problems == [
        f"cell {where}: '6.76' in '...One batch took 6.76 ms and was 1x faster; the mod...'",
        f"cell {where}: '1x' in '...One batch took 6.76 ms and was 1x faster; the model sees about...'",
        f"cell {where}: 'about two' (a summary of numbers: make it with course.claims in a cell)"]


def test_a_false_claim_stops_the_lecture(tmp_path):
    """A claim whose numbers do not support it fails the run that makes it, naming it."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from course.claims import claim, ratio\n"
        "separate, together = 9.15, 6.76\n"
        "claim(separate > 2 * together, f'a batch is far faster: {ratio(separate, together)}',"
        " 'at least twice as fast')")])
    path = tmp_path / "planted.ipynb"
    nbformat.write(nb, path)
    ran, _, error = execute(path)
    assert first_error(ran) == (0, "ClaimError")
    assert "a batch is far faster: 1.35x" in str(error) and "at least twice as fast" in str(error)


# ---------------------------------------------------------------- the helpers

def test_claim_shows_a_supported_sentence_and_refuses_the_other(capsys):
    claims.claim(6.76 < 9.15, "the batch is faster")
    assert capsys.readouterr().out == "the batch is faster\n"      # no IPython here: printed
    with pytest.raises(claims.ClaimError, match="'the batch is far faster'.*not supported|numbers do not"):
        claims.claim(9.15 > 2 * 6.76, "the batch is far faster")


def test_helpers_format_honestly():
    assert claims.ratio(9.15, 6.76) == "1.35x"
    assert claims.ratio(30, 2) == "15.0x" and claims.ratio(1, 8) == "0.125x"
    assert claims.about([1.9, 2.2], 2, unit="epochs") == "about 2 epochs"
    with pytest.raises(claims.ClaimError, match="1.05"):
        claims.about([1.05, 1.45], 2, unit="epochs")
    assert claims.most([True, True, False], "models") == "2 of 3 models"
    with pytest.raises(claims.ClaimError):
        claims.most([True, False])
    assert claims.best_epoch([30, 25, 24.18, 23.33]) == 4
    assert not claims.stopped_improving([30, 25, 24.18, 23.33])
    assert claims.stopped_improving([30, 25, 24, 24.5])


def test_markdown_numbers_skip_what_is_not_a_claim():
    text = ("## 2. Batches (tutorial eq 47, [RAN] eq 8, section 6.5, Shi 2016, reference [14])\n\n"
            "1. the first item, $W \\in \\mathbb R^{4 \\times 3}$, `train[:600]`, [link](../05_gru.ipynb)\n"
            "the batch is 1.35x faster on 1,527 words, 55% of them")
    assert [w for w, _ in markdown_numbers(text)] == ["1.35x", "1,527", "55%"]
    assert value("1,527") == (1527.0, 0) and value("1.35x") == (1.35, 2)
    assert is_printed("1.35x", [(1.3514, 4, "ratio")]) and not is_printed("1.3", [(1.35, 2, "")])
    assert not is_printed("1.35", [(1.4, 1, "")])      # a printed value cannot be more precise in prose
    assert not is_printed("1x", [(1.0, 0, "")]) and is_printed("55%", [(55.0, 1, "share")])


# ---------------------------------------------------------------- results pages

@pytest.mark.parametrize("page", sorted((ROOT / "bench" / "results").glob("*.md")), ids=lambda p: p.stem)
def test_every_results_table_renders_as_a_table(page):
    """Every table of a results page has as many cells in each row as in its header (a raw
    '|' inside a cell splits it, and the book shows the page's table as text)."""
    from markdown_it import MarkdownIt
    text = page.read_text()
    written = len(re.findall(r"^\|(?:\s*:?-+:?\s*\|)+\s*$", text, re.M))
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert html.count("<table>") == written, f"{page.name}: {written} tables written, {html.count('<table>')} rendered"
