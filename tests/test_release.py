"""The student release holds no solution, no hidden test, no reference code, no grader data."""
import ast
import re

import nbformat
import pytest

from autograder.reference.grading import graded_functions
from autograder.release import build
from autograder.grader import spec_of
from tests.conftest import ROOT

pytestmark = pytest.mark.xdist_group("release")   # one worker builds the release once (module fixture)


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return build(tmp_path_factory.mktemp("release") / "course-release")


def text_files(root):
    for path in root.rglob("*"):
        if path.is_file() and path.suffix in {".py", ".ipynb", ".md", ".txt", ".toml", ".yml", ".json", ".tsv"}:
            yield path, path.read_text(encoding="utf-8", errors="replace")


def test_release_has_what_students_need(release):
    for item in ["exercises", "lectures", "data/course/valid.txt", "pyproject.toml", "README.md",
                 "environment.yml", "bench/results/converge.json", "bench/results/capstone_budget.json",
                 "bench/results/converge/lstm-s1-weights.npz", "bench/results/converge/arrows.json"]:
        assert (release / item).exists(), item
    assert sorted(p.name for p in (release / "exercises").glob("*.ipynb")) == \
        sorted(p.name for p in (ROOT / "exercises").glob("*.ipynb"))
    # every module of the course package, however it is split (model, training, sampling, grammar ...)
    assert sorted(p.name for p in (release / "course").glob("*.py")) == \
        sorted(p.name for p in (ROOT / "course").glob("*.py"))


def test_release_has_no_solutions_hidden_tests_or_reference(release):
    assert not (release / "solutions").exists() and not (release / "autograder").exists()
    for path, text in text_files(release):
        markers = ["BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "grading import check"]
        if path.suffix == ".ipynb":          # (course/cell.py names the reference only to explain its absence)
            markers += ["autograder.reference", "autograder/reference"]
        for marker in markers:
            assert marker not in text, f"{path.relative_to(release)} contains {marker!r}"


def code_sources(root):
    """(where, code) for every .py file and every notebook code cell."""
    for path in root.rglob("*.py"):
        yield str(path.relative_to(root)), path.read_text()
    for path in root.rglob("*.ipynb"):
        for k, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type == "code":
                yield f"{path.relative_to(root)} cell {k}", cell.source


def test_nothing_in_the_release_imports_the_grader(release):
    """The solutions' hidden tests run in the release with the grader beside it
    (tests/test_student_release.py); nothing a student gets may lean on it."""
    for where, code in code_sources(release):
        code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(code)):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not [n for n in names if n.split(".")[0] == "autograder"], f"{where} imports the grader"


def test_graded_functions_appear_only_as_stubs(release):
    """A graded name may be defined in an exercise only as the NotImplementedError stub (or a
    thin wrapper that computes nothing itself, e.g. one ablation calling another's stub)."""
    answers = {gid for path in (ROOT / "solutions").glob("*.ipynb") for gid in spec_of(path).answers}
    graded = graded_functions() | answers        # answer cells are named after their function (ran_step)
    assert {"gru_step", "ran_step", "lstm_init", "memory_weights", "perplexity"} <= graded
    for where, code in code_sources(release):
        for name in graded:
            for match in re.finditer(rf"^def {name}\(", code, flags=re.M):
                rest = code[match.end():]
                end = re.search(r"\n\S", rest)
                body = rest[:end.start() if end else None]
                code_only = re.sub(r'"""[\s\S]*?"""', "", body)
                computes = re.search(r"\bdy\.|\bnp\.|cmult\(|logistic\(|tanh\(", code_only)
                assert "NotImplementedError" in body or not computes, f"{where} defines {name} with a body"


def test_release_has_no_grader_data(release):
    hidden = (ROOT / "autograder" / "heldout" / "course_hidden.txt").read_text().splitlines()
    long_lines = {line for line in hidden if len(line.split()) >= 30}
    assert long_lines
    for path, text in text_files(release):
        assert not long_lines & set(text.splitlines()), f"{path} contains held-out sentences"
    heldout_names = {p.name for p in (ROOT / "autograder" / "heldout").iterdir()}
    assert not [p for p in release.rglob("*") if p.name in heldout_names]


def test_release_readme_says_how_on_every_platform_and_links_work_off_the_hub(release):
    readme = (release / "README.md").read_text()
    for words in ["macOS", "Windows", "Linux", "conda env create -f environment.yml", "pip install -e .",
                  "nbgrader validate", "Assignments", "Submit"]:
        assert words in readme, words
    for path, text in text_files(release):
        if path.suffix == ".ipynb" or path.name == "README.md":
            assert "/services/book/" not in text, f"{path.relative_to(release)} links to a page only the hub serves"
    lectures = {p.name for p in (release / "lectures").glob("*.ipynb")}
    for path in (release / "exercises").glob("*.ipynb"):
        for target in re.findall(r"\.\./lectures/(\w+\.ipynb)", path.read_text()):
            assert target in lectures, f"{path.name} links to a lecture the release lacks: {target}"
