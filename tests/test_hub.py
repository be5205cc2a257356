"""The course on JupyterHub, end to end, as a class uses it (hub/, docs/teaching.md).

One hub on free loopback ports, an instructor and two students (real Unix accounts,
removed afterwards). The students work in a real browser (Playwright driving Debian's
chromium): log in, open the Assignments tab, fetch 05_gru, fill gru_step (ada
correctly, bob with the update gate exchanged), save, run the visible check in their
own kernel, submit; the instructor
collects, autogrades (whatever the course's nbgrader configuration runs) and releases
feedback through formgrader's API; each student fetches it and reads their own score
and check messages, and no hidden test. Screenshots of every step land in
runs/hub-test/. Then the isolation between accounts, and the exchange attacks.

Needs root, Debian's chromium and configurable-http-proxy (`make test` installs the last two).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import nbformat
import pytest
from urllib.parse import quote

from hub import accounts, prepare
from hub.layout import COURSE_ID
from hub.local import LocalHub
from tests.browser import CHROMIUM
from tests.conftest import ROOT

SHOTS = ROOT / "runs" / "hub-test"
pytestmark = pytest.mark.xdist_group("hub")          # one hub, one worker

# gru_step's body, typed into the notebook: ada's is right, bob's exchanges the update gate.
BODY = '''(h_prev,) = state
r = dy.logistic(dy.affine_transform([p["b_r"], p["W_xr"], x, p["W_hr"], h_prev]))
z = dy.logistic(dy.affine_transform([p["b_z"], p["W_xz"], x, p["W_hz"], h_prev]))
candidate = dy.tanh(dy.affine_transform([p["b_h"], p["W_xh"], x, p["W_hh"], dy.cmult(r, h_prev)]))
h = {mix}
return (h,)'''
RIGHT = "dy.cmult(1 - z, h_prev) + dy.cmult(z, candidate)"
SWAPPED = "dy.cmult(z, h_prev) + dy.cmult(1 - z, candidate)"


def requirements_missing() -> list:
    missing = []
    if os.geteuid() != 0:
        missing.append("root (the hub makes Unix accounts)")
    if not Path(CHROMIUM).exists():
        missing.append("Debian's chromium (apt-get install chromium)")
    if not shutil.which("configurable-http-proxy"):
        missing.append("configurable-http-proxy (make proxy installs it)")
    return missing


def test_a_roster_mistake_is_named_with_its_line_and_fix(tmp_path, capsys):
    roster = tmp_path / "roster.txt"
    for text, says in [("instructor teacher\nstudnet ada\n", "line 2: expected 'instructor NAME [PASSWORD]'"),
                       ("instructor teacher\nstudent Ada+1\n", "'Ada+1' is not a usable account name: use lower-case"),
                       ("student ada\n", "name exactly one instructor (found 0)"),
                       ("instructor teacher\nstudent ada\nstudent ada\n", "a name appears twice: ada")]:
        roster.write_text(text)
        assert prepare.main(["--roster", str(roster), "--root", str(tmp_path / "hub")]) == 2
        assert says in capsys.readouterr().err
    assert not (tmp_path / "hub").exists()             # nothing made from a wrong roster


def test_a_root_students_cannot_reach_is_refused(tmp_path):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with pytest.raises(prepare.PrepareError, match="not traversable by other users"):
        prepare.check_reachable(private / "hub")


# session-scoped: under xdist a worker may run other modules' tests between these, and a
# module-scoped hub would then be torn down and started afresh, without the class's work
@pytest.fixture(scope="session")
def hub():
    missing = requirements_missing()
    assert not missing, "test_hub needs " + ", ".join(missing) + " (make test installs the proxy and chromium)"
    SHOTS.mkdir(parents=True, exist_ok=True)
    with LocalHub(students=["ada", "bob"], log_copy=SHOTS / "jupyterhub.log") as local:
        yield local


# -- the browser ------------------------------------------------------------------
def shot(page, name):
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def open_assignments(page, hub, name):
    page.goto(f"{hub.url}/user/{name}/tree")
    page.get_by_text("Nbgrader", exact=True).first.click()
    page.get_by_text("Assignment List", exact=True).first.click()
    page.get_by_text("Released, downloaded, and submitted assignments").wait_for(timeout=60_000)


def log_in(page, hub, name):
    page.goto(f"{hub.url}/hub/login")
    page.fill("#username_input", name)
    page.fill("#password_input", hub.passwords[name])
    page.click("#login_submit")
    page.wait_for_url(f"**/user/{name}/**", timeout=180_000)


def fill_gru_step(page, hub, name, mix):
    page.goto(f"{hub.url}/user/{name}/notebooks/05_gru/05_gru.ipynb")
    cell = page.locator(".jp-CodeCell").filter(has_text="def gru_step(p, x, state)")
    stub = cell.locator(".cm-line").filter(has_text="raise NotImplementedError")
    stub.wait_for(timeout=120_000)
    stub.click()
    page.keyboard.press("End")
    page.keyboard.press("Shift+Home")                   # the stub, after its indentation
    body = BODY.format(mix=mix).replace("\n", "\n    ")
    page.keyboard.insert_text(body)
    cell.locator(".cm-line").filter(has_text=mix).wait_for(timeout=30_000)
    page.keyboard.press("Control+s")
    return cell


def run_visible_check(page, right):
    """Run the notebook down to gru_step's visible check in the student's own kernel: the
    course environment is all a student needs."""
    # the first visible check after the answer: the update gate's (eq 59), which names an exchanged z
    check = page.locator(".jp-CodeCell").filter(has_text='print("gru_step: z = 0 keeps the state')
    check.locator(".cm-line").first.click()
    page.get_by_text("Run", exact=True).first.click()
    page.get_by_text("Run All Above Selected Cell", exact=True).first.click()
    check.locator(".jp-InputPrompt").first.click()       # the check cell itself, in command mode
    page.keyboard.press("Shift+Enter")
    expected = "gru_step: z = 0 keeps the state" if right else "AssertionError"
    check.locator(".jp-OutputArea").get_by_text(expected).first.wait_for(timeout=240_000)
    return check.locator(".jp-OutputArea").inner_text()


def student_round_trip(browser, hub, name, mix, step):
    """Log in, Assignments tab, fetch 05_gru, fill gru_step, save, submit."""
    page = browser.new_page(viewport={"width": 1280, "height": 860})
    log_in(page, hub, name)
    open_assignments(page, hub, name)
    released = page.locator(".list_item", has_text="05_gru").first
    for chapter in ("03_lstm", "05_gru"):       # the lists load after the tab ("Loading, please wait...")
        page.locator(".list_item", has_text=chapter).first.wait_for(timeout=120_000)
    shot(page, f"{step}-{name}-1-assignments")
    assert "03_lstm" in page.inner_text("body") and "05_gru" in page.inner_text("body")
    released.get_by_role("button", name="Fetch").click()
    page.locator("#fetched_assignments_list").get_by_text("05_gru", exact=True).first.wait_for(timeout=60_000)
    shot(page, f"{step}-{name}-2-fetched")

    fill_gru_step(page, hub, name, mix)
    shot(page, f"{step}-{name}-3-answer")
    output = run_visible_check(page, mix == RIGHT)
    shot(page, f"{step}-{name}-3b-visible-check")
    if mix == RIGHT:
        assert "z = 0 keeps the state" in output and "Error" not in output, output
    else:                                   # the visible check tells bob (the traceback quotes its print)
        assert "AssertionError: with z = 0 the state must stay as it was" in output, output
    deadline = time.monotonic() + 30
    while not any(mix in cell["source"] and "def gru_step" in cell["source"]
                  for cell in hub.login(name).read_file("05_gru/05_gru.ipynb")["content"]["cells"]):
        assert time.monotonic() < deadline, "the notebook was not saved"
        time.sleep(1)

    open_assignments(page, hub, name)
    page.locator("#fetched_assignments_list .list_item", has_text="05_gru").get_by_role(
        "button", name="Submit").click()
    submitted = page.locator("#submitted_assignments_list .list_item", has_text="05_gru")
    submitted.first.wait_for(timeout=60_000)
    shot(page, f"{step}-{name}-4-submitted")
    return page


def hidden_tests(chapter):
    """The hidden tests' lines of a solution notebook, and the checks they call."""
    lines = []
    for cell in nbformat.read(ROOT / "solutions" / f"{chapter}.ipynb", as_version=4).cells:
        for block in re.findall(r"### BEGIN HIDDEN TESTS(.*?)### END HIDDEN TESTS", cell.source, re.S):
            lines += [line.strip() for line in block.splitlines() if line.strip()]
    checks = sorted({m for line in lines for m in re.findall(r"""check\(\s*["']([\w.\-]+)["']""", line)})
    assert lines and checks
    return lines, checks


def instructor_grades(teacher, students) -> dict:
    """Collect, autograde, generate and release feedback through formgrader's API; the scores."""
    collected = teacher.formgrader("assignment/05_gru/collect", "collect 05_gru")
    for name in students:
        assert f"Collecting submission: {name} 05_gru" in collected["log"], collected["log"]
        teacher.formgrader(f"submission/05_gru/{name}/autograde", f"autograde {name}")
    teacher.formgrader("assignment/05_gru/generate_feedback", "generate feedback")
    teacher.formgrader("assignment/05_gru/release_feedback", "release feedback")
    return {name: teacher.server("GET", f"formgrader/api/submission/05_gru/{name}", "read a submission").json()
            for name in students}


def student_reads_feedback(page, hub, name, score):
    """Fetch the feedback in the Assignments tab and open it: their score, the checks, no hidden test."""
    hidden, checks = hidden_tests("05_gru")
    open_assignments(page, hub, name)
    item = page.locator("#submitted_assignments_list .list_item", has_text="05_gru").first
    item.get_by_role("button", name="Fetch Feedback").click()
    link = page.locator("#submitted_assignments_list a", has_text="view feedback").first
    link.wait_for(timeout=60_000)
    shot(page, f"b-{name}-1-feedback-fetched")
    link.click()                                  # the file browser, at the feedback's folder
    page.get_by_text("05_gru.html").first.wait_for(timeout=30_000)
    shot(page, f"b-{name}-2-feedback-folder")
    submitted = next(a for a in hub.login(name).assignments(COURSE_ID)
                     if a["assignment_id"] == "05_gru" and a["status"] == "submitted")
    folder = submitted["submissions"][-1]["local_feedback_path"]
    page.goto(f"{hub.url}/user/{name}/files/{quote(folder)}/05_gru.html")
    shot(page, f"b-{name}-3-feedback")
    text = page.inner_text("body")
    numbers = {float(n) for n in re.findall(r"\d+(?:\.\d+)?", text)}
    assert score["score"] in numbers and score["max_score"] in numbers, (score, text[:2000])
    for check in checks:
        assert check in text, f"{name}'s feedback page does not name the check {check}:\n{text[:3000]}"
    assert "BEGIN HIDDEN TESTS" not in page.content()
    for line in hidden:
        assert line not in text, f"a hidden test line reached {name}'s feedback page: {line}"
    return text


def test_a_class_on_the_hub_in_a_browser(hub):
    from playwright.sync_api import sync_playwright
    teacher = hub.login(hub.instructor)
    teacher.start_server()
    for chapter in ("03_lstm", "05_gru"):
        teacher.formgrader(f"assignment/{chapter}/assign", f"generate {chapter}")
        teacher.formgrader(f"assignment/{chapter}/release", f"release {chapter}")
    ada, bob = hub.students
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        pages = {}
        for name, mix in ((ada, RIGHT), (bob, SWAPPED)):
            pages[name] = student_round_trip(browser, hub, name, mix, "a")
            text = pages[name].locator("#submitted_assignments_list").inner_text()
            assert "05_gru" in text and "UTC" in text, text       # the submission's time stamp

        scores = instructor_grades(teacher, [ada, bob])
        assert scores[ada]["score"] == scores[ada]["max_score"] > 0, scores
        assert scores[bob]["score"] < scores[ada]["score"], scores
        pages_text = {name: student_reads_feedback(pages[name], hub, name, scores[name]) for name in (ada, bob)}
        assert pages_text[ada] != pages_text[bob]
        browser.close()


def test_students_cannot_read_what_is_not_theirs(hub):
    """Each student, with their server's rights, tries the other's work and every instructor file."""
    teacher = hub.instructor
    grader, course = hub.layout.grader(teacher), hub.layout.course_dir(teacher)
    for me, other in (hub.students, hub.students[::-1]):
        other_home = hub.layout.home(other)
        forbidden = [other_home / "05_gru" / "05_gru.ipynb", other_home, course / "gradebook.db",
                     course / "source" / "05_gru" / "05_gru.ipynb", course / "submitted",
                     grader / "solutions" / "05_gru.ipynb", grader / "solutions",
                     grader / "autograder" / "reference" / "ch05_gru.py", grader / "autograder" / "reference",
                     hub.layout.exchange / COURSE_ID / "inbound", hub.layout.state / "jupyterhub.sqlite"]
        allowed = [hub.layout.home(me) / "05_gru" / "05_gru.ipynb", hub.layout.release / "course" / "cell.py"]
        for path in forbidden + allowed:
            assert path.exists(), path                   # a missing path would prove nothing
            tried = hub.run_as(me, TRY_READ + f"print(json.dumps(try_all({[str(p) for p in forbidden + allowed]!r})))")
        refused = {path: tried[str(path)] for path in forbidden}
        assert set(refused.values()) == {"PermissionError"}, refused
        assert all(tried[str(path)] == "read" for path in allowed), tried


TRY_READ = '''
import json, os
def try_all(paths):
    out = {}
    for path in paths:
        try:
            os.listdir(path) if os.path.isdir(path) else open(path, "rb").read(1)
            out[path] = "read"
        except Exception as err:
            out[path] = type(err).__name__
    return out
'''


def test_collect_takes_only_what_the_student_wrote(hub):
    """Submissions planted in the exchange by hand, bypassing `nbgrader submit`, collected through the hub."""
    teacher = hub.login(hub.instructor)
    teacher.start_server()
    inbound = hub.layout.exchange / COURSE_ID / "inbound"
    if not (inbound.parent / "outbound" / "03_lstm").exists():  # the class test releases it, if it ran first here
        teacher.formgrader("assignment/03_lstm/assign", "generate 03_lstm")
        teacher.formgrader("assignment/03_lstm/release", "release 03_lstm")
    ada, bob = hub.students
    solutions = hub.layout.grader(hub.instructor) / "solutions"
    submitted = hub.layout.course_dir(hub.instructor) / "submitted"
    stamp = lambda k: f"2020-01-01 00:00:{k:02d}.000000 UTC"      # each plant newer than the last, older than now

    plants = {   # what ada leaves in inbound, as code run with her rights
        "symlinked submission": f"os.symlink({str(solutions)!r}, f'{{inbound}}/{ada}+03_lstm+{stamp(1)}+a')",
        "symlinked notebook": f"d = f'{{inbound}}/{ada}+03_lstm+{stamp(2)}+b'; os.mkdir(d); "
                              f"os.symlink({str(solutions / '03_lstm.ipynb')!r}, d + '/03_lstm.ipynb')",
        "FIFO notebook": f"d = f'{{inbound}}/{ada}+03_lstm+{stamp(3)}+c'; os.mkdir(d); os.mkfifo(d + '/03_lstm.ipynb')",
        "submission in another's name": f"d = f'{{inbound}}/{bob}+03_lstm+{stamp(4)}+d'; os.mkdir(d); "
                                        "open(d + '/03_lstm.ipynb', 'w').write('{}')",
    }
    # the attack is real: nbgrader's own collect takes the solutions for ada's
    plant(hub, ada, inbound, plants["symlinked submission"])
    stock = hub.layout.course_dir(hub.instructor) / "stock-collect"
    run = accounts.as_user(hub.instructor, ["nbgrader", "collect", "03_lstm", f"--Exchange.root={hub.layout.exchange}",
                           "--ExchangeFactory.collect=nbgrader.exchange.default.collect.ExchangeCollect",
                           "--CourseDirectory.submitted_directory=stock-collect"],
                           cwd=hub.layout.course_dir(hub.instructor),
                           env=prepare.server_env(hub.layout, hub.instructor), capture_output=True, text=True,
                           timeout=120)
    assert (stock / ada / "03_lstm" / "05_gru.ipynb").exists(), run.stdout + run.stderr
    shutil.rmtree(stock)

    for attack, code in plants.items():
        if attack != "symlinked submission":
            plant(hub, ada, inbound, code)
        log = teacher.formgrader("assignment/03_lstm/collect", f"collect ({attack})")["log"]
        assert "Refused the submission" in log, (attack, log)
        assert not (submitted / ada / "03_lstm").exists() and not (submitted / bob / "03_lstm").exists(), attack

    # an honest submission after all that is collected
    me = hub.login(ada)
    me.start_server()
    me.assignment_action("fetch", COURSE_ID, "03_lstm")
    me.assignment_action("submit", COURSE_ID, "03_lstm")
    log = teacher.formgrader("assignment/03_lstm/collect", "collect the honest one")["log"]
    notebook = submitted / ada / "03_lstm" / "03_lstm.ipynb"
    assert notebook.is_file() and not notebook.is_symlink(), log
    assert "BEGIN SOLUTION" not in notebook.read_text()


def plant(hub, name, inbound, code):
    hub.run_as(name, f"import json, os\ninbound = {str(inbound)!r}\n{code}\nprint(json.dumps('ok'))")


def test_a_student_runs_lecture_05_and_exercise_05_from_the_release(hub):
    """What the hub serves is the student release in the course environment: as ada, with her
    server's environment, lecture 05 and exercise 05 (her answers in it) run top to bottom, the
    lecture reading the results it cites from the release."""
    from autograder.notebook_runner import DIED_AT_START, KERNEL_STARTS, with_answers
    ada = hub.students[0]
    # the link above each answer cell, ../lectures/05_gru.ipynb from ~/05_gru/, opens in her server
    hub.login(ada).start_server()
    lecture = hub.login(ada).read_file("lectures/05_gru.ipynb")["content"]
    assert any("Eq 59 is a weighted average" in c["source"] for c in lecture["cells"])
    home = hub.layout.home(ada)
    solved = with_answers(hub.layout.release / "exercises" / "05_gru.ipynb", ROOT / "solutions" / "05_gru.ipynb")
    nbformat.write(solved, home / "solved_05_gru.ipynb")
    shutil.chown(home / "solved_05_gru.ipynb", ada)
    code = f"""
import json, shutil, nbformat
from nbclient import NotebookClient
shutil.copy({str(hub.layout.release / "lectures" / "05_gru.ipynb")!r}, "lecture_05_gru.ipynb")
ran = {{}}
for name in ["lecture_05_gru.ipynb", "solved_05_gru.ipynb"]:
    for attempt in range(1, {KERNEL_STARTS} + 1):   # a kernel that died at its start: autograder/notebook_runner.py
        nb = nbformat.read(name, as_version=4)
        try:
            NotebookClient(nb, timeout=300, kernel_name="python3").execute()
            break
        except RuntimeError as err:
            if {DIED_AT_START!r} not in str(err) or attempt == {KERNEL_STARTS}:
                raise
    ran[name] = [o.get("text", "") for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "stream"]
print(json.dumps(ran))
"""
    ran = hub.run_as(ada, code, timeout=600)
    lecture, exercise = "\n".join(ran["lecture_05_gru.ipynb"]), "\n".join(ran["solved_05_gru.ipynb"])
    assert "DyNet" in lecture and "largest |weighted sum - eq 59|" in lecture, lecture[:2000]
    assert "gru_step: same outputs as dy.GRUBuilder" in exercise, exercise[:2000]
