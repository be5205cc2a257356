"""The student release holds no solution, no hidden test, no reference code, no grader data."""
import re

import nbformat
import pytest

from autograder.reference.cells import GRADED_STEP_NAMES
from autograder.release import build
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return build(tmp_path_factory.mktemp("release") / "course-release")


def text_files(root):
    for path in root.rglob("*"):
        if path.is_file() and path.suffix in {".py", ".ipynb", ".md", ".txt", ".toml", ".yml", ".json", ".tsv"}:
            yield path, path.read_text(encoding="utf-8", errors="replace")


def test_release_has_what_students_need(release):
    for item in ["exercises", "lectures", "course/lm.py", "data/course/valid.txt", "pyproject.toml", "README.md"]:
        assert (release / item).exists(), item
    assert sorted(p.name for p in (release / "exercises").glob("*.ipynb")) == \
        sorted(p.name for p in (ROOT / "exercises").glob("*.ipynb"))


def test_release_has_no_solutions_hidden_tests_or_reference(release):
    assert not (release / "solutions").exists() and not (release / "autograder").exists()
    for path, text in text_files(release):
        markers = ["BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "grading import check"]
        if path.suffix == ".ipynb":          # (course/lm.py names the reference only to explain its absence)
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


def test_graded_functions_appear_only_as_stubs(release):
    """A graded name may be defined in an exercise only as the NotImplementedError stub (or a
    thin wrapper that computes nothing itself, e.g. one ablation calling another's stub)."""
    graded = set(GRADED_STEP_NAMES) | {"lstm_init", "memory_weights"}
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
    assert not list(release.rglob("*hidden*"))
