"""The chapter manifest (``autograder/chapters.toml``), read: the one list of the course's chapters
and graded functions.

Everything that lists chapters or graded functions reads it here: the README's chapter table
(``python -m autograder.chapters --write`` renders it), the book's lectures, the student release's
README, the due dates (a date for a chapter the course does not have is refused), the grader's
assignments, the hub's course, the slip table and the tests. ``tests/test_chapters.py`` checks it
against the tree: every notebook, check module, probe and test file it names exists, and every
graded function the checks call is listed. ``python -m autograder.scaffold`` appends to it.

The manifest is data (TOML), not code, so that the scaffold adds an entry by appending text, a
reader needs nothing but the standard library, and nothing in it can run. This module imports
nothing else of the course: ``book/`` and ``hub/`` read it without the grader's dependencies.
"""
from __future__ import annotations

import argparse
import functools
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from course.paths import ROOT

MANIFEST = Path(__file__).with_name("chapters.toml")
STEM = re.compile(r"\d\d_[a-z0-9_]+")
README_TABLE = re.compile(r"^\| # \| chapter \|\n\|---\|---\|\n(?:\|.*\|\n)+", re.M)


@dataclass(frozen=True)
class Function:
    name: str            # what the student writes, e.g. "gru_step"
    chapter: str         # the chapter's stem, "05_gru"
    checks: str          # autograder/reference/chNN_*.py: its CHECKS (and its reference, unless below)
    probe: str           # autograder/probes/...: what runs it in the sandbox
    tests: str           # tests/test_checks_chNN*.py: its tests and SLIPS
    reference: str = ""  # where the reference implementation lives, when not in `checks`

    @property
    def module(self) -> str:
        """The checks' module, ``autograder.reference.chNN_...``."""
        return ".".join(Path(self.checks).with_suffix("").parts)


@dataclass(frozen=True)
class Chapter:
    stem: str            # "05_gru": lectures/, solutions/ and exercises/ hold STEM.ipynb
    title: str           # the README's chapter table
    functions: tuple = ()
    checks: str = ""     # graded work that is no function (the capstone's model): its checks ...
    probe: str = ""      # ... its probe ...
    tests: str = ""      # ... and its tests

    @property
    def number(self) -> str:
        return self.stem[:2]

    @property
    def prefix(self) -> str:
        """The prefix of its checks' names and modules, ``ch05``."""
        return "ch" + self.number

    def notebook(self, folder: str) -> Path:
        """``lectures``, ``solutions`` or ``exercises``: this chapter's notebook there."""
        return ROOT / folder / f"{self.stem}.ipynb"


class ManifestError(ValueError):
    """The manifest is malformed: the message names the entry and the fix."""


def load(path: Path = MANIFEST) -> list[Chapter]:
    """The chapters in the manifest's order (by number), each with its graded functions."""
    return list(_parse(Path(path).read_text(), path))


@functools.lru_cache(maxsize=16)
def _parse(text: str, path: Path) -> tuple[Chapter, ...]:
    """The manifest's chapters, parsed once per text: a feedback page asked for every check's chapter,
    and each ask parsed the whole manifest 13 times (0.15 s a page)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ManifestError(f"{path}: {err}; fix the line it names") from None
    chapters, functions = {}, {}
    for entry in raw.get("chapter", []):
        stem = entry.get("stem", "")
        if not STEM.fullmatch(stem) or not entry.get("title"):
            raise ManifestError(f"{path}: chapter {entry!r} needs a stem like \"05_gru\" and a title")
        if stem[:2] in {c[:2] for c in chapters}:
            raise ManifestError(f"{path}: two chapters numbered {stem[:2]}; give each its own number")
        chapters[stem] = entry
        functions[stem] = []
    for entry in raw.get("function", []):
        try:
            function = Function(**entry)
        except TypeError as err:
            raise ManifestError(f"{path}: function {entry!r}: {err}; its fields are name, chapter, "
                                "checks, probe, tests and (optional) reference") from None
        if function.chapter not in chapters:
            raise ManifestError(f"{path}: function {function.name} names chapter {function.chapter!r}, "
                                "which has no [[chapter]] entry; add one (python -m autograder.scaffold does)")
        if function.name in {f.name for f in functions[function.chapter]}:
            raise ManifestError(f"{path}: {function.name} is listed twice in chapter {function.chapter}")
        functions[function.chapter].append(function)
    return tuple(sorted((Chapter(**entry, functions=tuple(functions[stem])) for stem, entry in chapters.items()),
                        key=lambda c: c.stem))


def stems() -> list[str]:
    """The chapters' stems in order: the course's assignments."""
    return [c.stem for c in load()]


def functions() -> list[Function]:
    """Every graded function, chapter by chapter."""
    return [f for c in load() for f in c.functions]


def test_modules() -> list[str]:
    """The test files that hold the chapters' tests and slips, in the manifest's order, each once."""
    found = []
    for c in load():
        for tests in [f.tests for f in c.functions] + ([c.tests] if c.tests else []):
            if tests not in found:
                found.append(tests)
    return found


def check_modules(prefix: str) -> list[str]:
    """The modules that hold the checks of chapter ``prefix`` ("ch05"), each once."""
    found = []
    for c in load():
        if c.prefix == prefix:
            for checks in [f.checks for f in c.functions] + ([c.checks] if c.checks else []):
                module = ".".join(Path(checks).with_suffix("").parts)
                if module not in found:
                    found.append(module)
    return found


def chapter_range() -> str:
    """"00 to 11": the chapters' numbers, first to last."""
    numbers = [c.number for c in load()]
    return f"{numbers[0]} to {numbers[-1]}" if numbers else "by number"


def readme_table(path: Path = MANIFEST) -> str:
    """The chapter table of README.md (the book's list of chapters is that section of the README)."""
    return "| # | chapter |\n|---|---|\n" + "".join(f"| {c.number} | {c.title} |\n" for c in load(path))


def write_readme(readme: Path = ROOT / "README.md", path: Path = MANIFEST) -> bool:
    """Put the chapter table into README.md in place of the one there; True if it changed."""
    text = readme.read_text()
    if not README_TABLE.search(text):
        raise ManifestError(f"{readme} has no chapter table (a '| # | chapter |' header) to replace")
    new = README_TABLE.sub(lambda _: readme_table(path), text, count=1)
    readme.write_text(new)
    return new != text


def main(argv=None):
    parser = argparse.ArgumentParser(description="The chapter manifest: print the README's chapter table")
    parser.add_argument("--write", action="store_true", help="write it into README.md instead")
    args = parser.parse_args(argv)
    if args.write:
        print("README.md " + ("updated" if write_readme() else "already up to date"))
    else:
        sys.stdout.write(readme_table())


if __name__ == "__main__":
    main()
