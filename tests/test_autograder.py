"""The sample class, graded end to end: intake, the confined grader, nbgrader's
gradebook, export and feedback. Every attack is run for real.

Every submission gets exactly the score its working functions earn and its
expected status; every failure has a readable reason; no student's grade depends
on another's; no grader file changes; nothing the sandbox started outlives it;
no datagram leaves it; nbgrader's own export shows the trusted scores; feedback
pages reveal no hidden test.
"""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from unittest import mock

import nbformat
import pytest

from autograder import grade, grader, intake
from autograder.cellmarks import marks
from autograder.reference.grading import all_checks
from autograder.samples import make_samples
from course.files import sha256_of
from tests.conftest import ROOT, make_deep, once_per_run, remove_deep, sandbox_processes

pytestmark = pytest.mark.xdist_group("sample-class")   # one worker writes feedback and exports into the class
SAMPLES = ROOT / "autograder" / "samples"
EXPECTED = json.loads((SAMPLES / "expected.json").read_text())
# an answer cell defines functions in milliseconds: 8 s is ample under a loaded machine, and the class's two
# endless loops (infinite_loop, ignores_interrupt) each burn it in full, in every grading of the class
LIMITS = grader.Limits(cell_s=8, check_s=30, wall_s=240)
# made at test time (git cannot hold them, or should not): the words their reason must hold
PLANTED = {"fifo_notebook": "a FIFO", "hard_link": "a hard link",
           "deep_model": "more than 16 folder levels deep",           # a model folder 1,100 levels deep
           "many_files": "more than 1000 files and folders",          # 20,000 empty files beside the notebook
           "correct\n": "student folder's name",                      # a second "correct", one newline longer
           "a_schema_too_new": "nbgrader autograde stopped"}         # nbgrader refuses its cell metadata
JUNK = 900        # files in junk_files' model folder: within the limits, graded, never shown to nbgrader
GUARDED = ["autograder", "course", "solutions", "exercises", "lectures", "data"]


def expected_score(student: str) -> float:
    """A check passes when every function it calls works (unless the sample says
    otherwise for that check); a cell earns the points of the checks that pass."""
    info = EXPECTED[student]
    if "failed" in info["statuses"]:
        return 0.0
    checks, total = all_checks(), 0.0
    for _, _, weights in grader.spec_of(ROOT / "solutions" / f"{info['notebook']}.ipynb").tests:
        for name, points in weights.items():
            works = all(info["functions"].get(f, False) for f in checks[name].functions)
            if info["checks"].get(name, works):
                total += points
    return round(total, 6)


def grader_file_hashes() -> dict:
    found = {}
    for top in GUARDED:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and not path.is_symlink() and "work" not in path.relative_to(ROOT).parts \
                    and "__pycache__" not in path.parts:
                found[str(path.relative_to(ROOT))] = sha256_of(path)
    return found


def sandboxes_in(boxes) -> list:
    """Processes still running from this run's sandboxes (their working folders are in
    ``boxes``; other grading runs on the machine are not counted)."""
    return [args for _, args in sandbox_processes() if str(boxes) in args]


def grade_the_class(tmp):
    """The committed sample class, the planted students beside it, graded into ``tmp``/course;
    what the tests read of it saved in ``tmp``/graded.json."""
    submissions = tmp / "submissions"
    shutil.copytree(SAMPLES / "submissions", submissions, symlinks=True)
    for student in make_samples.STUDENTS:          # names no Windows checkout could hold
        if not make_samples.portable(student):
            make_samples.write_student(student, submissions)
    correct = submissions / "correct" / "05_gru.ipynb"
    (submissions / "fifo_notebook").mkdir()
    os.mkfifo(submissions / "fifo_notebook" / "05_gru.ipynb")
    (submissions / "hard_link").mkdir()
    os.link(ROOT / "solutions" / "05_gru.ipynb" if os.stat(ROOT / "solutions").st_dev == os.stat(tmp).st_dev
            else correct, submissions / "hard_link" / "05_gru.ipynb")
    for student in ("deep_model", "many_files", "junk_files", "correct\n"):
        (submissions / student).mkdir()
        shutil.copyfile(correct, submissions / student / "05_gru.ipynb")
    # nbgrader itself stops on this notebook (a cell's metadata schema is newer than it knows); its
    # name sorts first, so one `nbgrader autograde 05_gru` for the chapter would stop there too
    nb = nbformat.read(correct, as_version=4)
    next(c for c in nb.cells if marks(c).get("solution")).metadata.nbgrader.schema_version = 99
    (submissions / "a_schema_too_new").mkdir()
    nbformat.write(nb, submissions / "a_schema_too_new" / "05_gru.ipynb")
    deep = submissions / "deep_model" / "05_gru_model"
    make_deep(deep, 1100)
    for student, count in (("many_files", 20_000), ("junk_files", JUNK)):
        (submissions / student / "05_gru_model").mkdir()
        for i in range(count):
            (submissions / student / "05_gru_model" / f"{i}.txt").touch()
    before = grader_file_hashes()
    course, boxes = tmp / "course", tmp / "sandboxes"
    boxes.mkdir()
    # this run's sandboxes live here: each nbgrader run makes them in its environment's TMPDIR
    saved, tempfile.tempdir = tempfile.tempdir, str(boxes)
    seen, grading = [], threading.Event()        # sandboxes seen while it grades: the check below can see them

    def watch():
        while not grading.wait(0.5):
            seen.extend(sandboxes_in(boxes)[:1])
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        with mock.patch.dict(os.environ, {"TMPDIR": str(boxes)}):
            records = grade.autograde(submissions, course=course, workers=2, limits=LIMITS)
    finally:
        grading.set()
        watcher.join()
        tempfile.tempdir = saved
        remove_deep(deep)
    deadline = time.monotonic() + 10              # a namespace's last processes, being reaped, may show a moment
    while sandboxes_in(boxes) and time.monotonic() < deadline:
        time.sleep(0.5)
    (tmp / "graded.json").write_text(json.dumps({"records": records, "before": before, "after": grader_file_hashes(),
                                                 "leftovers": sandboxes_in(boxes), "seen": len(seen)}))


def graded_class(tmp_path_factory) -> dict:
    """The sample class, graded once per run by the first worker to ask (this module's tests
    and tests/test_dask_grading.py's local pool read the same grading)."""
    folder = once_per_run(tmp_path_factory, "sample-class", grade_the_class)
    saved = json.loads((folder / "graded.json").read_text())
    return {**saved, "course": folder / "course", "records": {r["student"]: r for r in saved["records"]},
            "listed": saved["records"]}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return graded_class(tmp_path_factory)


@pytest.fixture(scope="module")
def feedback_pages(graded):
    """The class's feedback pages, made once (`make feedback`'s grade.write_feedback: a process per
    page, about a minute for the class) and read by every test that checks them."""
    return grade.write_feedback(graded["course"])


def test_sample_submissions_are_generated_from_the_exercises(tmp_path, monkeypatch):
    monkeypatch.setattr(make_samples, "OUT", tmp_path / "submissions")
    monkeypatch.setattr(make_samples, "HERE", tmp_path)
    make_samples.build()
    for path in sorted((tmp_path / "submissions").rglob("*")):
        committed = SAMPLES / "submissions" / path.relative_to(tmp_path / "submissions")
        if path.is_symlink():
            assert committed.is_symlink() and os.readlink(committed) == os.readlink(path), committed
        elif path.is_file():
            assert committed.read_bytes() == path.read_bytes(), \
                f"{committed} is stale: run `python -m autograder.samples.make_samples`"


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_each_submission_gets_exactly_what_it_earned(graded, student):
    record = graded["records"][student]
    assert record["score"] == pytest.approx(expected_score(student)), record
    assert record["status"] in EXPECTED[student]["statuses"], record
    words = EXPECTED[student]["words"]
    told = record["reason"] + " " + " ".join(p for c in record.get("cells", []) for ps in c["checks"].values()
                                            for p in ps)
    if words:
        assert words in told, f"{student}: expected {words!r} in {told!r}"
    said = json.dumps(record)
    for word in EXPECTED[student].get("absent", []):     # text the submission sent, never the grader's words
        assert word not in said, f"{student}: {word!r} reached the grader's record: {said}"
    if record["status"] != "graded" or record["score"] < record["max_score"]:
        assert told.strip(), "a lost point needs a readable reason"


@pytest.mark.parametrize("student", sorted(PLANTED))
def test_fifos_and_hard_links_are_refused_with_a_reason(graded, student):
    record = graded["records"][student]
    assert record["status"] == "failed" and record["score"] == 0, record
    assert PLANTED[student] in record["reason"], record


def test_junk_files_are_kept_from_nbgrader(graded):
    record = graded["records"]["junk_files"]
    assert record["status"] == "graded" and record["score"] == record["max_score"], record
    kept = (graded["course"] / "submitted" / "junk_files" / "05_gru").rglob("*.txt")
    assert [p.name for p in kept] == ["timestamp.txt"]        # intake's record of when it was received, no junk


def test_the_whole_class_is_graded_and_recorded_in_nbgraders_gradebook(graded):
    records = graded["records"]
    assert set(records) == set(EXPECTED) | set(PLANTED) | {"junk_files"}
    export = graded["course"] / "export.csv"
    grade.nbgrader("export", f"--to={export}", course=graded["course"])
    exported = {(r["student_id"], r["assignment"]): float(r["score"]) for r in csv.DictReader(open(export))}
    for student, record in records.items():
        if record["status"] != "failed":
            assert exported[(student, record["notebook"])] == pytest.approx(record["score"]), student
            stored = trusted_score = json.loads((graded["course"] / "trusted" / student /
                                                 f"{record['notebook']}.json").read_text())["score"]
            assert stored == pytest.approx(trusted_score)


def test_no_grader_file_changes_and_nothing_outlives_the_sandbox(graded):
    assert graded["after"] == graded["before"], "grading changed files of the course or the grader"
    assert not (ROOT / "autograder" / "reference" / "ch99_planted.py").exists()
    rewritten = json.loads((graded["course"] / "trusted" / "rewrites_results" / "05_gru.json").read_text())
    assert rewritten["score"] == expected_score("rewrites_results") and rewritten["cells"], "a forged result"
    assert graded["seen"] > 0, "no sandbox was seen while the class was graded: the check of what outlives them is blind"
    assert graded["leftovers"] == [], f"processes the sandbox started are still alive: {graded['leftovers']}"
    assert "Network is unreachable" in graded["records"]["udp_send"]["reason"], "a datagram could leave"


def test_grading_the_same_submission_twice_gives_the_same_score():
    path = SAMPLES / "submissions" / "wrong_gate_order" / "04_forget_gate.ipynb"
    first, second = grader.grade(path, limits=LIMITS), grader.grade(path, limits=LIMITS)
    assert first.to_json() == second.to_json()


def test_grade_table_csv_has_a_status_for_everyone(graded, tmp_path):
    records = list(graded["records"].values())
    grade.write_csv(records, tmp_path / "grades.csv")
    rows = list(csv.DictReader(open(tmp_path / "grades.csv")))
    assert len(rows) == len(records)
    formulas = [v for r in rows for v in r.values() if v[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert not formulas, f"cells a spreadsheet would run as formulas: {formulas}"
    assert any(r["student"].startswith("'=HYPERLINK") for r in rows)
    assert {r["status"] for r in rows} <= {"graded", "failed", "needs manual grade"}
    assert all(r["reason"] for r in rows if r["status"] == "failed")


def test_feedback_pages_show_checks_but_no_hidden_test_or_reference_value(graded, feedback_pages):
    solution = nbformat.read(ROOT / "solutions" / "05_gru.ipynb", as_version=4)
    hidden = [line.strip() for cell in solution.cells for line in cell.source.splitlines()
              if "check(" in line or "autograder" in line]
    seen = 0
    for student, record in graded["records"].items():
        if not intake.STUDENT_ID.fullmatch(student):       # no folder to put a page in: the table says why
            continue
        page = feedback_pages / student / record["notebook"] / f"{record['notebook']}.html"
        text = page.read_text()
        seen += 1
        assert student in text and record["notebook"] in text
        assert "BEGIN HIDDEN" not in text and not any(line in text for line in hidden), page
        if record["status"] == "graded" and record["score"] < record["max_score"] and record["cells"]:
            assert "failed" in text
    assert seen == len([s for s in graded["records"] if intake.STUDENT_ID.fullmatch(s)])


ACTIVE = ["<script>alert", "onerror", 'href="javascript:']     # markup that would run in a browser


def test_no_page_runs_the_students_markup(graded, feedback_pages):
    """The student's markdown, as the feedback page and formgrader (nbconvert's HTML
    of the autograded notebook, in the instructor's browser) show it."""
    from nbconvert import HTMLExporter
    shown = {"feedback": (feedback_pages / "html_markdown" / "05_gru" / "05_gru.html").read_text(),
             "formgrader": HTMLExporter().from_filename(
                 str(graded["course"] / "autograded" / "html_markdown" / "05_gru" / "05_gru.ipynb"))[0]}
    for where, text in shown.items():
        assert "5 / 5 points" in text or where == "feedback", "the student's markdown should still be shown"
        assert not [a for a in ACTIVE if a in text], f"{where} page runs the student's markup"


def test_a_feedback_page_reads_whole_offline_in_a_browser(feedback_pages):
    """A student's feedback page opened as a file in Chromium with the network off: the equations
    typeset (MathML, no script), no TeX left showing, every check's line whole (wrapped, not cut in
    a scrolling box), the points in words instead of a bare `Out[ ]`, and no link to a page that is
    not there. A screenshot lands in runs/feedback-test/."""
    from tests.browser import offline_page
    page_file = feedback_pages / "wrong_gate_order" / "04_forget_gate" / "04_forget_gate.html"
    shots = ROOT / "runs" / "feedback-test"
    shots.mkdir(parents=True, exist_ok=True)
    with offline_page() as page:
        page.goto(page_file.as_uri())
        page.screenshot(path=str(shots / "04_forget_gate.png"), full_page=True)
        seen = page.evaluate("""() => ({
            math: document.querySelectorAll('math').length,
            tex: document.body.innerText.includes('$$') || document.body.innerText.includes('\\tag{'),
            cut: Array.from(document.querySelectorAll('.output_wrapper pre'))
                      .filter(e => e.scrollWidth > e.clientWidth + 1).length,
            prompts: Array.from(document.querySelectorAll('.prompt')).filter(e => /Out/.test(e.innerText)).length,
            links: Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href'))})""")
        text = page.inner_text("body")
    assert seen["math"] >= 5 and not seen["tex"], seen
    assert seen["cut"] == 0 and seen["prompts"] == 0, seen
    assert "FAILED ch04.lstm_forget_gate" in text and "points: 0 of 1" in text
    assert not [h for h in seen["links"] if h.startswith("/") or "services/book" in h or ".ipynb" in h], seen["links"]


def test_two_threads_can_start_dynet_at_once():
    """The instructor's first command once failed here: two grading threads both
    starting DyNet ("dynet was imported before course.runtime.init()")."""
    code = ("import threading\nfrom course import runtime\nerrors = []\n"
            "def start():\n    try:\n        runtime.dynet()\n    except Exception as err:\n        errors.append(err)\n"
            "threads = [threading.Thread(target=start) for _ in range(4)]\n"
            "[t.start() for t in threads]; [t.join() for t in threads]\nprint(errors)\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "[]", run.stdout + run.stderr
