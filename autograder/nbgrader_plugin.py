"""Stage 2, the nbgrader plugin: the course's grader inside nbgrader's own workflow (the steps
nbgrader_config.py names, in its order).

* :class:`GradeInSandbox` takes the place of nbgrader's ``Execute`` in
  ``nbgrader autograde``: no kernel runs the submission. It is the one caller of
  the grader (:func:`autograder.grader.grade_folder`): it grades the submitted folder
  (student code only in the confined sandbox; here, or on a worker of a Dask cluster
  when ``scheduler`` is set) and writes each test cell's output: the check messages, then the cell's
  trusted points as the cell's result, which nbgrader's ``SaveAutoGrades`` stores
  in the gradebook as partial credit. Formgrader, ``nbgrader export`` and the
  feedback all show that score, and written answers are graded by hand in
  formgrader as usual.
* :class:`KnownCells` gives every cell the nbgrader marks the instructors' notebook
  has for its grade_id: an unknown grade_id's marks are removed (the cell is kept,
  ungraded, and the notes say so), a known one's grade, answer and points restored,
  so an extra grade cell or an answer cell marked as a grade cell neither stops
  nbgrader (``KeyError`` in its OverwriteCells) nor asks for a manual grade. Marks
  without a readable grade_id (``"nbgrader": "x"``, a number, ``{}``) are removed
  too, before nbgrader's own steps, which read them as a mapping (``AttributeError``).
* :class:`MarkDuplicates` and :class:`RestoreCells` make nbgrader's sanitising
  survive what Jupyter lets students do: a copied answer cell (nbgrader 0.9's
  DeduplicateIds leaves ``nbgrader: {}`` behind, on which a later step fails) and a
  deleted test cell that followed a locked cell (its ``add_missing_cells`` then fails).
* :class:`CourseFeedback` runs in ``nbgrader generate_feedback``: it removes the
  hidden tests from the test cells and puts the course's summary on top; :class:`LimitText`
  then cuts the student's text to a bounded size, with a note where it was cut.
* :class:`SanitizeHtml` runs in ``nbgrader autograde``: formgrader (in the instructor's
  browser) renders the student's markdown and outputs as HTML, so markup that could run
  there (scripts, event handlers, ``javascript:`` links, styles) is removed with ``nh3``
  before the notebook reaches ``autograded/``.
* :func:`page_markdown` is the markdown filter of every page nbconvert makes with this
  configuration (formgrader's, the feedback's): equations typeset as MathML from the
  parser's tokens, then ``nh3``, the last step. :class:`FeedbackPage` is the feedback's
  exporter: the finished page's body through ``nh3``, no script, a CSP, nothing loaded.

``GradeInSandbox`` keeps the grader's result of each submission in the result store
(:mod:`autograder.results`) for the feedback page and the grade table's notes, never read
back as a score (the score is the gradebook's). Every cell's marks are read through
:mod:`autograder.cellmarks`.
"""
from __future__ import annotations

import html
import re
from pathlib import Path

import jinja2
import nbformat
import nh3
from nbconvert.exporters import HTMLExporter
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor, OverwriteCells
from traitlets import Dict, Unicode

from autograder import feedback
from autograder.cellmarks import has_marks, is_test, marks, unmark
from autograder.grader import grade_folder
from autograder.results import load_result, save_result, status_of
from autograder.sandbox import Limits

HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[ \t]*\n?", re.S | re.M)


class MarkDuplicates(NbGraderPreprocessor):
    """Later copies of a cell id become ordinary cells, marked as copies (the
    first one in notebook order is graded, as in :func:`autograder.grader.answer_sources`)."""

    def preprocess(self, nb, resources):
        seen = set()
        for cell in nb.cells:
            gid = marks(cell).get("grade_id")
            if gid is None:
                continue
            if gid in seen:
                unmark(cell, copy_of=gid)
            seen.add(gid)
        return nb, resources


class KnownCells(NbGraderPreprocessor):
    """Each cell's nbgrader marks as the instructors' notebook has them for its grade_id."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gb:
            source = gb.find_notebook(info["notebook"], info["assignment"])
            known = {cell.name for cell in source.source_cells}
            points = {cell.name: cell.max_score for cell in source.grade_cells}
            answers = {cell.name for cell in source.solution_cells}
            tasks = {cell.name for cell in source.task_cells}
        for cell in nb.cells:
            if not has_marks(cell):
                continue
            meta = marks(cell)
            gid = meta.get("grade_id")
            if gid not in known:                                 # also marks without a readable grade_id
                unmark(cell, ignored=True)                       # grader.odd_cells names these cells too
                continue
            meta["grade"], meta["solution"] = gid in points, gid in answers
            if gid in points:
                meta["points"] = points[gid]
            else:
                meta.pop("points", None)
            if meta.get("task") or gid in tasks:
                meta["task"] = gid in tasks
        return nb, resources


class RestoreCells(OverwriteCells):
    """nbgrader's OverwriteCells, with a deleted grade cell put back after the
    nearest earlier cell of the instructors' notebook that is still there."""

    def add_missing_grade_cells(self, nb, resources):
        source_nb = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        source_ids = [cell.name for cell in source_nb.source_cells]
        solution_ids = {cell.name for cell in source_nb.solution_cells}
        for grade_cell in source_nb.grade_cells:
            present = [marks(c).get("grade_id") for c in nb.cells]
            if grade_cell.name in present:
                continue
            self.log.warning("Missing grade cell %s encountered, adding to notebook", grade_cell.name)
            index = source_ids.index(grade_cell.name)
            cell = self.missing_cell_transform(source_nb.source_cells[index], grade_cell.max_score,
                                               is_solution=grade_cell.name in solution_ids)
            earlier = [present.index(gid) for gid in source_ids[:index] if gid in present]
            nb.cells.insert(max(earlier) + 1 if earlier else 0, cell)
        return nb, resources


#: what nh3 keeps, with the ids and classes nbconvert's own markdown carries
_ATTRIBUTES = {tag: set(names) | {"id", "class"} for tag, names in nh3.ALLOWED_ATTRIBUTES.items()}
_ATTRIBUTES["*"] = _ATTRIBUTES.get("*", set()) | {"id", "class"}
SAFE_OUTPUTS = {"text/plain", "image/png", "image/jpeg", "image/gif"}


def safe_markdown(source: str, attachments: dict | None = None) -> str:
    """Markdown as nbconvert renders it, unchanged when that HTML is safe; otherwise
    the sanitised HTML, on one line (a raw HTML block that markdown leaves alone)."""
    rendered = feedback.render_markdown(source, attachments, typeset=False)
    clean = nh3.clean(rendered, attributes=_ATTRIBUTES, link_rel=None)
    if html.unescape(clean) == html.unescape(rendered):
        return source
    return "<div>" + clean.replace("\r", "").replace("\n", "&#10;") + "</div>"


class SanitizeHtml(NbGraderPreprocessor):
    """The student's markdown sanitised, raw cells not rendered, outputs as text and images only."""

    def preprocess(self, nb, resources):
        for cell in nb.cells:
            for bundle in cell.get("attachments", {}).values():
                for key in set(bundle) - SAFE_OUTPUTS:
                    del bundle[key]
            if cell.cell_type == "markdown":
                cell.source = safe_markdown(cell.source, cell.get("attachments"))
            elif cell.cell_type == "raw":
                for key in ("raw_mimetype", "format"):
                    cell.metadata.pop(key, None)
            for output in cell.get("outputs", []):
                for key in set(output.get("data", {})) - SAFE_OUTPUTS:
                    del output["data"][key]
        return nb, resources


class GradeInSandbox(NbGraderPreprocessor):
    """In place of nbgrader's Execute: the trusted grader's points as each test cell's result.
    It grades the file the student submitted (``submitted/<student>/<assignment>/``, as intake
    or the exchange's collect left it), not nbgrader's sanitised copy, and stores the result
    for the feedback page."""

    scheduler = Unicode("", help="a Dask scheduler (tls://HOST:PORT) whose workers grade; "
                                 "empty: grade on this machine").tag(config=True)
    certs = Unicode("", help="the folder of the course's cluster certificates (make cluster-certs); "
                             "empty: autograder/work/cluster").tag(config=True)
    limits = Dict(help="the grader's limits (fields of sandbox.Limits); empty: its defaults").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        coursedir = CourseDirectory(config=self.config)
        folder = Path(coursedir.format_path(coursedir.submitted_directory, info["student"], info["assignment"]))
        result = grade_folder(info["notebook"], folder, Limits(**self.limits), self.scheduler, self.certs)
        save_result(Path(coursedir.root), info["student"], info["notebook"], result)
        cells = {c["grade_id"]: c for c in result.get("cells", [])}
        for cell in nb.cells:              # its marks are as KnownCells left them and nbgrader checked them
            if not is_test(cell):
                continue
            meta = marks(cell)
            score = cells.get(meta["grade_id"])
            if score is None:
                text, points = "not graded: " + (result.get("failure") or "no result"), 0.0
            else:
                text, points = feedback.check_lines(score), score["points"]
            points = min(max(points, 0.0), float(meta.get("points", 0)))
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text),
                            nbformat.v4.new_output("execute_result", data={"text/plain": f"{points:g}"},
                                                   execution_count=None)]
        return nb, resources


class CourseFeedback(NbGraderPreprocessor):
    """No hidden test in the feedback; the course's summary on top (and its style in the page's
    head); each test cell's points said in words (nbgrader's bare `Out[ ]: 1` is for the gradebook).
    Equations are typeset by the page's markdown filter (:func:`page_markdown`)."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.source = HIDDEN.sub("", cell.source).rstrip()
                points = [o for o in cell.get("outputs", []) if o.get("output_type") == "execute_result"]
                if is_test(cell) and points:
                    cell.outputs = [o for o in cell.outputs if o not in points] + [nbformat.v4.new_output(
                        "stream", name="stdout", text=f"points: {points[-1]['data'].get('text/plain', '0')} "
                                                      f"of {float(marks(cell).get('points', 0)):g}\n")]
            elif cell.cell_type == "markdown":
                cell.source = feedback.lecture_links(cell.source)
        course = Path(CourseDirectory(config=self.config).root)
        result = load_result(course, info["student"], info["notebook"]) or {"notebook": info["notebook"]}
        late = info.get("late_penalty") or 0
        summary = feedback.summary_html(result, info["student"], score=info.get("score"),
                                        status=status_of(result, needs_manual=False)[0],
                                        reason=f"late: {late:g} point{'s' if late != 1 else ''} taken by the "
                                               "course's late policy" if late else "")
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(summary))
        resources.setdefault("inlining", {}).setdefault("css", []).append(feedback.CSS)
        return nb, resources


class LimitText(NbGraderPreprocessor):
    """A page's cost bounded before it is rendered: each cell's text (source, outputs) cut at
    ``feedback.CELL_CHARS`` and the page's at ``feedback.PAGE_CHARS``, attached images at
    ``feedback.PAGE_IMAGES``, with a note where the text was cut. It runs after CourseFeedback, so
    that no cut splits a hidden test from the lines that remove it, and leaves its summary (the
    first cell, the grader's words) whole."""

    def preprocess(self, nb, resources):
        text, images = feedback.PAGE_CHARS, feedback.PAGE_IMAGES
        for cell in nb.cells[1:]:                 # the first is CourseFeedback's summary
            cell.source = feedback.cut(cell.source, min(feedback.CELL_CHARS, text))
            text -= min(len(cell.source), text)
            for output in cell.get("outputs", []):
                for holder, key in [(output, "text"), (output.get("data", {}), "text/plain")]:
                    if isinstance(holder.get(key), str):
                        holder[key] = feedback.cut(holder[key], min(feedback.CELL_CHARS, text))
                        text -= min(len(holder[key]), text)
            for name, bundle in list(cell.get("attachments", {}).items()):
                size = sum(len(data) for data in bundle.values())
                if size > images:
                    del cell.attachments[name]             # shown as its alt text
                images -= min(size, images)
        return nb, resources


@jinja2.pass_context
def page_markdown(context, source: str) -> str:
    """The pages' markdown filter (formgrader's and the feedback's): rendered, equations typeset
    as MathML, then cleaned with nh3 as the last step (:func:`feedback.markdown_html`)."""
    return feedback.markdown_html(source, context.get("cell", {}).get("attachments", {}))


def as_written(text: str) -> str:
    """In place of nbconvert's strip_files_prefix, which would turn a clean `files/javascript:...`
    link into a live `javascript:` one after the sanitiser: links stay as the sanitiser left them."""
    return text


class FeedbackPage(HTMLExporter):
    """nbgrader's feedback page, made safe as its last step (:func:`feedback.sanitized_page`): no
    script and no load from elsewhere in its head, a CSP, and its whole body through nh3."""

    def from_notebook_node(self, nb, resources=None, **kw):
        output, resources = super().from_notebook_node(nb, resources, **kw)
        return feedback.sanitized_page(output), resources
