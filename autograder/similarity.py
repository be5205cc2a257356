"""Similar submissions: which students' answer cells of a chapter are suspiciously alike.

    python -m autograder.similarity 06_minibatching [--submissions DIR] [--out DIR] [--threshold 0.5]
    make similarity CHAPTER=06_minibatching

Each student's answer cells (the cells the instructor's notebook marks as answers, found by their
grade_id; nothing else a student wrote) become one file; copydetect (winnowed fingerprints of the
token stream, with names and literals abstracted, so renamed variables and moved lines are still
found) compares every pair, with the released stubs and the instructor's solution as boilerplate that
does not count. The pairs are printed, most alike first, and the side-by-side report is written to
``OUT/CHAPTER.html`` for the instructor to read. It is a place to look, not a verdict: short
functions that everyone writes from the same equations share a lot. Nothing here runs student
code, and nothing is written where students could see it (not into ``feedback/``).

SUBMISSIONS is a class folder as ``make autograde`` takes it (``STUDENT/CHAPTER.ipynb`` or
``STUDENT/CHAPTER/CHAPTER.ipynb``), or an nbgrader course's ``submitted/``.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import nbformat

from autograder import trusted
from course.paths import ROOT

DEFAULT_SUBMISSIONS = ROOT / "autograder" / "work" / "course" / "submitted"
DEFAULT_OUT = ROOT / "autograder" / "work" / "similarity"
THRESHOLD = 0.5     # share of a student's answer tokens found in the other's, above which a pair is flagged


def answers(notebook, ids: list[str]) -> str:
    """The code of the notebook's answer cells, as the grader finds them (the first copy of each)."""
    return "\n\n".join(source for _, source in trusted.answer_sources(notebook, ids)[0]) + "\n"


def find_notebooks(submissions: Path, chapter: str) -> dict:
    """student -> notebook path, for both layouts; a student without this chapter is left out."""
    found = {}
    for folder in sorted(p for p in submissions.iterdir() if p.is_dir() and not p.is_symlink()):
        for path in (folder / f"{chapter}.ipynb", folder / chapter / f"{chapter}.ipynb"):
            if path.is_file() and not path.is_symlink():
                found.setdefault(folder.name, path)
    return found


def compare(submissions: Path, chapter: str, out: Path, threshold: float = THRESHOLD) -> list:
    """Write OUT/CHAPTER.html; return [(similarity, student, other, share of student's, share of
    other's, tokens in common)], most alike first, every pair once."""
    from copydetect import CopyDetector
    ids = trusted.spec_of(ROOT / "solutions" / f"{chapter}.ipynb").answers
    notebooks = find_notebooks(submissions, chapter)
    if len(notebooks) < 2:
        raise ValueError(f"{len(notebooks)} submission(s) of {chapter} in {submissions}: nothing to compare")
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        students, boilerplate = work / "students", work / "boilerplate"
        boilerplate.mkdir()
        students.mkdir()
        for name, path in notebooks.items():
            try:
                code = answers(nbformat.read(path, as_version=4), ids)
            except Exception as err:                # an unreadable notebook: compared as empty
                print(f"{name}: {path.name} is not a readable notebook ({type(err).__name__}); left out",
                      file=sys.stderr)
                code = "\n"
            (students / f"{name}.py").write_text(code)
        for kind in ("exercises", "solutions"):     # what every student was given, and the expected answer
            given = nbformat.read(ROOT / kind / f"{chapter}.ipynb", as_version=4)
            (boilerplate / f"{kind}.py").write_text(answers(given, ids))
        out.mkdir(parents=True, exist_ok=True)
        detector = CopyDetector(test_dirs=[str(students)], boilerplate_dirs=[str(boilerplate)],
                                extensions=["py"], display_t=threshold, autoopen=False, silent=True,
                                out_file=str(out / f"{chapter}.html"), noise_t=20, guarantee_t=20)
        detector.run()
        detector.generate_html_report()
        report = out / f"{chapter}.html"                # the students' files named without this temporary folder
        report.write_text(report.read_text().replace(f"{work}/", ""))
        names = [Path(f).stem for f in detector.test_files]
        matrix = detector.similarity_matrix
        pairs = []
        for a in range(len(names)):
            for b in range(a + 1, len(names)):
                share_a, share_b = float(matrix[a, b, 0]), float(matrix[a, b, 1])
                if share_a < 0 or share_b < 0:      # copydetect marks pairs it skipped with -1
                    continue
                tokens = int(detector.token_overlap_matrix[a, b])
                pairs.append((max(share_a, share_b), names[a], names[b], share_a, share_b, tokens))
    return sorted(pairs, reverse=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Pairs of students whose answer cells are alike (instructors only).")
    parser.add_argument("chapter", help="e.g. 06_minibatching")
    parser.add_argument("--submissions", type=Path, default=DEFAULT_SUBMISSIONS,
                        help="a class folder, or a course's submitted/ (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the report goes (default: %(default)s)")
    parser.add_argument("--threshold", type=float, default=THRESHOLD,
                        help="flag pairs where this share of one student's answer is in the other's (default: %(default)s)")
    args = parser.parse_args(argv)
    if not (ROOT / "solutions" / f"{args.chapter}.ipynb").exists():
        parser.error(f"no chapter {args.chapter!r}: name a notebook of solutions/, e.g. 06_minibatching")
    if not args.submissions.is_dir():
        parser.error(f"{args.submissions} is not a folder: pass --submissions with the class's folder")
    try:
        pairs = compare(args.submissions, args.chapter, args.out, args.threshold)
    except ValueError as err:
        print(f"similarity: {err}", file=sys.stderr)
        return 2
    print(f"{'pair':40} {'alike':>6} {'of the first':>13} {'of the second':>14} {'tokens':>7}")
    for score, a, b, share_a, share_b, tokens in pairs:
        flag = "  <- look" if score >= args.threshold else ""
        print(f"{a + ' / ' + b:40} {score:6.0%} {share_a:13.0%} {share_b:14.0%} {tokens:7d}{flag}")
    print(f"side by side: {args.out / (args.chapter + '.html')} (instructors only; never shown to students)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
