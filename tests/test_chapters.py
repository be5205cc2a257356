"""The chapter manifest (autograder/chapters.toml) agrees with the tree, so that every reader of it
(the README's table, the book, the release, the due dates, the grader, the hub, the tests) sees
the course as it is: every notebook, check module, probe and test file it names exists; every
numbered notebook and check module of the tree is in it; every function the checks call is listed
under its chapter, and each listed function is called by a check of the module named for it."""
import importlib
import re
from pathlib import Path

import pytest

from autograder import chapters
from autograder.reference.grading import all_checks
from tests.conftest import ROOT

CHAPTERS = chapters.load()


def test_every_notebook_of_the_tree_is_a_chapter_of_the_manifest():
    for folder in ("lectures", "solutions", "exercises"):
        on_disk = sorted(p.stem for p in (ROOT / folder).glob("*.ipynb"))
        assert on_disk == [c.stem for c in CHAPTERS], \
            f"{folder}/ and autograder/chapters.toml disagree: add the chapter with python -m autograder.scaffold"


def test_every_file_the_manifest_names_exists():
    named = [path for c in CHAPTERS for path in (c.checks, c.probe, c.tests) if path]
    named += [path for f in chapters.functions() for path in (f.checks, f.probe, f.tests, f.reference) if path]
    missing = sorted({path for path in named if not (ROOT / path).is_file()})
    assert not missing, f"autograder/chapters.toml names files that do not exist: {missing}"
    for f in chapters.functions():
        number = f.chapter[:2]
        assert re.fullmatch(rf"autograder/reference/ch{number}_\w+\.py", f.checks), f
        assert re.fullmatch(rf"tests/test_checks_ch{number}\w*\.py", f.tests), f
        assert f.probe.startswith("autograder/probes/"), f


def test_every_check_module_is_in_the_manifest():
    """A chNN_*.py module the manifest does not name would never be graded."""
    on_disk = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "autograder" / "reference").glob("ch*.py"))
    named = {c.checks for c in CHAPTERS} | {f.checks for f in chapters.functions()}
    assert [p for p in on_disk if p not in named] == []


def test_the_manifest_lists_exactly_the_functions_the_checks_call():
    called = {(name[:4], function) for name, c in all_checks().items() for function in c.functions}
    listed = {("ch" + f.chapter[:2], f.name) for f in chapters.functions()}
    assert called == listed, f"called, not listed: {sorted(called - listed)}; listed, not called: {sorted(listed - called)}"
    for f in chapters.functions():
        module = importlib.import_module(f.module)
        checks = [c for c in module.CHECKS if f.name in c.functions]
        assert checks, f"{f.checks} has no check that calls {f.name}"
        probes = {c.probe.partition(":")[0] for c in checks}
        probe = ".".join(Path(f.probe).with_suffix("").parts).removesuffix(".__init__")
        assert probe in probes, f"{f.name}: its checks run {sorted(probes)}, not {f.probe}"


def test_the_readme_chapter_table_is_the_manifest_s():
    assert chapters.readme_table() in (ROOT / "README.md").read_text(), \
        "README.md's chapter table is stale: python -m autograder.chapters --write"


def test_a_malformed_manifest_is_refused_with_the_entry_named(tmp_path):
    path = tmp_path / "chapters.toml"
    path.write_text('[[chapter]]\nstem = "05_gru"\ntitle = "The GRU"\n\n'
                    '[[function]]\nname = "gru_step"\nchapter = "06_batches"\nchecks = "x"\nprobe = "y"\ntests = "z"\n')
    with pytest.raises(chapters.ManifestError, match="06_batches.*no \\[\\[chapter\\]\\] entry"):
        chapters.load(path)
    path.write_text('[[chapter]]\nstem = "5_gru"\ntitle = "The GRU"\n')
    with pytest.raises(chapters.ManifestError, match="stem like"):
        chapters.load(path)
    path.write_text('[[chapter]]\nstem = "05_gru"\ntitle = "The GRU"\n\n[[function]]\nname = "gru_step"\n'
                    'chapter = "05_gru"\nchecks = "x"\nprobe = "y"\ntest = "z"\n')
    with pytest.raises(chapters.ManifestError, match="unexpected keyword argument 'test'"):
        chapters.load(path)


def test_the_readme_table_is_written_in_place(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n| # | chapter |\n|---|---|\n| 00 | old |\n\n## after\n")
    assert chapters.write_readme(readme)
    assert readme.read_text() == "# x\n\n" + chapters.readme_table() + "\n## after\n"
    assert not chapters.write_readme(readme)
