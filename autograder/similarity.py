"""Similar submissions: which students' answer cells of a chapter are suspiciously alike.

    python -m autograder.similarity 06_minibatching [--submissions DIR] [--out DIR] [--threshold 0.5]
    make similarity CHAPTER=06_minibatching

Each student's answer cells (the cells the instructor's notebook marks as answers, found by their
grade_id; nothing else a student wrote) become one file; copydetect (winnowed fingerprints of the
token stream, with names and literals abstracted, so renamed variables and moved lines are still
found) compares every pair, with the released stubs and the instructor's solution as boilerplate that
does not count. The pairs are printed, most alike first, and a side-by-side report is written to
``OUT/CHAPTER.html`` for the instructor to read. It is a place to look, not a verdict: short
functions that everyone writes from the same equations share a lot. Nothing here runs student
code, and nothing is written where students could see it (not into ``feedback/``).

Code run from strings (``exec(base64.b64decode("..."))``, ``exec("def f(): ...")``) is compared as
the code it runs wherever that can be read without running anything: the strings an answer cell
builds from literals (joined, concatenated, reversed, decoded from base64, hex or zlib) are
decoded, and what parses as Python is compared with the rest. Every answer cell that runs code
from strings or holds encoded code gets a note to the instructor, decoded or not.

SUBMISSIONS is a class folder as ``make autograde`` takes it (``STUDENT/CHAPTER.ipynb`` or
``STUDENT/CHAPTER/CHAPTER.ipynb``), or an nbgrader course's ``submitted/``. Folder names are the
students' own text: the report escapes them, the terminal shows control characters as escapes.
"""
from __future__ import annotations

import argparse
import ast
import base64
import binascii
import codecs
import html
import sys
import tempfile
import zlib
from pathlib import Path

import nbformat

from autograder import grader
from autograder.intake import printable as shown      # a name for the terminal: no control character
from course.paths import ROOT

DEFAULT_SUBMISSIONS = ROOT / "autograder" / "work" / "course" / "submitted"
DEFAULT_OUT = ROOT / "autograder" / "work" / "similarity"
THRESHOLD = 0.5     # share of a student's answer tokens found in the other's, above which a pair is flagged

# ------------------------------------------------------------------ code run from strings
#: names through which an answer cell can run code it holds as data
RUNS_STRINGS = {"exec", "eval", "compile", "__import__", "importlib", "builtins", "__builtins__", "marshal",
                "pickle", "runpy", "FunctionType", "CodeType"}
DECODED_MAX = 1_000_000     # characters of decoded text kept from one string (a zlib bomb stops here)
DEPTH = 4                   # code decoded from code decoded from ...


def _zlib(data: bytes) -> bytes:
    return zlib.decompressobj().decompress(data, DECODED_MAX)


#: decoders an answer cell may call on a literal, by the name it calls them with
DECODERS = {"b64decode": base64.b64decode, "standard_b64decode": base64.standard_b64decode,
            "urlsafe_b64decode": base64.urlsafe_b64decode, "b32decode": base64.b32decode,
            "b16decode": base64.b16decode, "a85decode": base64.a85decode, "b85decode": base64.b85decode,
            "decodebytes": base64.decodebytes, "a2b_base64": binascii.a2b_base64,
            "unhexlify": binascii.unhexlify, "a2b_hex": binascii.a2b_hex, "fromhex": bytes.fromhex,
            "decompress": _zlib}


def _text(value) -> str | None:
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            return None
    return value if isinstance(value, str) else None


class _Strings:
    """The strings and bytes an answer cell builds from literals, worked out without running it:
    constants, names bound once to such a value, ``+``, joins, f-strings of constants, ``[::-1]``,
    ``.encode()``/``.decode()`` and the decoders above (``codecs.decode`` too)."""

    def __init__(self, tree):
        self.names, self.active, self.known = {}, set(), {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.names[node.targets[0].id] = node.value

    def value(self, node, depth: int = 0):
        if id(node) not in self.known:
            self.known[id(node)] = self._value(node, depth)
        return self.known[id(node)]

    def _value(self, node, depth: int):
        if depth > 50:
            return None
        v = lambda n: self.value(n, depth + 1)
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            return node.value
        if isinstance(node, ast.Name) and node.id in self.names and node.id not in self.active:
            self.active.add(node.id)                   # no loops through assignments
            try:
                return v(self.names[node.id])
            finally:
                self.active.discard(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = v(node.left), v(node.right)
            return a + b if type(a) is type(b) and isinstance(a, (str, bytes)) and len(a) + len(b) <= DECODED_MAX \
                else None
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [v(e) for e in node.elts]
            return items if all(isinstance(i, (str, bytes)) for i in items) else None
        if isinstance(node, ast.JoinedStr):
            parts = [v(e) if not isinstance(e, ast.FormattedValue) else None for e in node.values]
            return "".join(parts) if all(isinstance(p, str) for p in parts) else None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and node.slice.lower is None \
                and node.slice.upper is None and isinstance(node.slice.step, ast.UnaryOp):
            base = v(node.value)
            return base[::-1] if isinstance(base, (str, bytes)) else None
        if isinstance(node, ast.Call) and node.args:
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            owner = v(node.func.value) if isinstance(node.func, ast.Attribute) else None
            argument = v(node.args[0])
            try:
                if name == "join" and isinstance(owner, (str, bytes)) and isinstance(argument, list):
                    return owner.join(argument)
                if name in DECODERS and isinstance(argument, (str, bytes)):
                    data = argument.encode() if isinstance(argument, str) and name != "fromhex" else argument
                    return DECODERS[name](data)[:DECODED_MAX]
                if name == "decode" and len(node.args) >= 2 and isinstance(argument, (str, bytes)):  # codecs.decode
                    return codecs.decode(argument, v(node.args[1]) or "")
            except (ValueError, TypeError, LookupError, zlib.error, binascii.Error):
                return None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args:
            owner = v(node.func.value)
            if node.func.attr == "encode" and isinstance(owner, str):
                return owner.encode()
            if node.func.attr == "decode" and isinstance(owner, bytes):
                return _text(owner)
        return None


def _guesses(value):
    """A string as it reads, and as base64, hex or zlib-in-base64 (what encodes code in one line)."""
    yield value
    raw = value.encode() if isinstance(value, str) else value
    for decode in (base64.b64decode, bytes.fromhex if isinstance(value, str) else binascii.unhexlify):
        try:
            data = decode(value if decode is bytes.fromhex else raw)
        except (ValueError, TypeError, binascii.Error):
            continue
        yield data
        try:
            yield _zlib(data)
        except zlib.error:
            pass


def _as_code(value) -> str | None:
    """Text that parses as Python and does something: a statement other than an expression, or a
    call or lambda (not a word, not a sentence that happens to parse, like "x is y")."""
    text = _text(value)
    if not text or len(text) > DECODED_MAX:
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if any(not isinstance(s, ast.Expr) or isinstance(s.value, (ast.Call, ast.Lambda)) for s in tree.body):
        return text
    return None


def flatten(code: str, depth: int = 0) -> tuple[str, list[str]]:
    """``(code, notes)``: the answer cells' code followed by every piece of code it holds as a
    string that can be read without running it, and what the instructor should know (each name
    that runs strings, each kind of string decoded)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return code, []
    strings, hidden, encoded = _Strings(tree), [], False
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in RUNS_STRINGS} \
        | {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in RUNS_STRINGS}
    for node in ast.walk(tree):
        value = strings.value(node)
        if isinstance(value, str) and value in RUNS_STRINGS:
            used.add(value)                            # getattr(builtins, "ex" + "ec")
        if not isinstance(value, (str, bytes)) or len(value) < 8:
            continue
        for k, guess in enumerate(_guesses(value)):
            source = _as_code(guess)
            if source:
                encoded |= k > 0
                if source not in hidden and source.strip() != code.strip():
                    hidden.append(source)
                break
    notes = ([f"runs code from strings or reaches Python's machinery for it ({', '.join(sorted(used))})"]
             if used else []) + (["holds encoded code (base64, hex or zlib)"] if encoded else [])
    if hidden and depth < DEPTH:
        inner = [flatten(source, depth + 1) for source in hidden]
        code = code + "\n\n" + "\n\n".join(source for source, _ in inner) + "\n"
        notes += [n for _, found in inner for n in found if n not in notes]
    return code, notes


def answers(notebook, ids: list[str]) -> str:
    """The code of the notebook's answer cells, as the grader finds them (the first copy of each)."""
    return "\n\n".join(source for _, source in grader.answer_sources(notebook, ids)[0]) + "\n"


def find_notebooks(submissions: Path, chapter: str) -> dict:
    """student -> notebook path, for both layouts; a student without this chapter is left out."""
    found = {}
    for folder in sorted(p for p in submissions.iterdir() if p.is_dir() and not p.is_symlink()):
        for path in (folder / f"{chapter}.ipynb", folder / chapter / f"{chapter}.ipynb"):
            if path.is_file() and not path.is_symlink():
                found.setdefault(folder.name, path)
    return found


def compare(submissions: Path, chapter: str, out: Path, threshold: float = THRESHOLD) -> tuple[list, dict]:
    """Write OUT/CHAPTER.html; return ([(similarity, student, other, share of student's, share of
    other's, tokens in common)], most alike first, every pair once; {student: notes})."""
    from copydetect import CopyDetector
    ids = grader.spec_of(ROOT / "solutions" / f"{chapter}.ipynb").answers
    notebooks = find_notebooks(submissions, chapter)
    if len(notebooks) < 2:
        raise ValueError(f"{len(notebooks)} submission(s) of {chapter} in {submissions}: nothing to compare")
    names = list(notebooks)          # copydetect's files are named by position, never by the student's text
    notes = {}
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        students, boilerplate = work / "students", work / "boilerplate"
        boilerplate.mkdir()
        students.mkdir()
        for k, (name, path) in enumerate(notebooks.items()):
            try:
                code, found = flatten(answers(nbformat.read(path, as_version=4), ids))
            except Exception as err:                # an unreadable notebook: compared as empty
                print(f"{shown(name)}: {shown(path.name)} is not a readable notebook ({type(err).__name__}); "
                      "left out", file=sys.stderr)
                code, found = "\n", []
            if found:
                notes[name] = found
            (students / f"{k:05d}.py").write_text(code)
        for kind in ("exercises", "solutions"):     # what every student was given, and the expected answer
            given = nbformat.read(ROOT / kind / f"{chapter}.ipynb", as_version=4)
            (boilerplate / f"{kind}.py").write_text(answers(given, ids))
        detector = CopyDetector(test_dirs=[str(students)], boilerplate_dirs=[str(boilerplate)],
                                extensions=["py"], display_t=threshold, autoopen=False, silent=True,
                                noise_t=20, guarantee_t=20)
        detector.run()
        name_of = {f: names[int(Path(f).stem)] for f in detector.test_files}
        order = [name_of[f] for f in detector.test_files]
        matrix = detector.similarity_matrix
        pairs = []
        for a in range(len(order)):
            for b in range(a + 1, len(order)):
                share_a, share_b = float(matrix[a, b, 0]), float(matrix[a, b, 1])
                if share_a < 0 or share_b < 0:      # copydetect marks pairs it skipped with -1
                    continue
                tokens = int(detector.token_overlap_matrix[a, b])
                pairs.append((max(share_a, share_b), order[a], order[b], share_a, share_b, tokens))
        shown_code = [(name_of[c[2]], name_of[c[3]], c[0], c[1], c[4], c[5])
                      for c in detector.get_copied_code_list()]
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{chapter}.html").write_text(report(chapter, sorted(pairs, reverse=True), notes, shown_code, threshold))
    return sorted(pairs, reverse=True), notes


def report(chapter: str, pairs: list, notes: dict, code: list, threshold: float) -> str:
    """The instructor's page: the pairs, the notes, the flagged pairs' code side by side (copydetect's
    highlighting, which escapes the code). Every name is escaped; the page loads nothing and passes
    nh3 as its last step."""
    from autograder.feedback import CSP, clean
    e = lambda text: html.escape(shown(str(text)))
    rows = "".join(f"<tr><td>{e(a)}</td><td>{e(b)}</td><td>{score:.0%}</td><td>{sa:.0%}</td><td>{sb:.0%}</td>"
                   f"<td>{tokens}</td><td>{'look' if score >= threshold else ''}</td></tr>"
                   for score, a, b, sa, sb, tokens in pairs)
    noted = "".join(f"<li><b>{e(name)}</b>: {e('; '.join(found))}</li>" for name, found in sorted(notes.items()))
    sides = "".join(f"<details open><summary>{e(a)} ({sa:.0%}) / {e(b)} ({sb:.0%})</summary><div class='sides'>"
                    f"<pre><code>{left}</code></pre><pre><code>{right}</code></pre></div></details>"
                    for a, b, sa, sb, left, right in code)
    body = (f"<h1>Similar answers: {e(chapter)}</h1>"
            "<p>A place to look, not a verdict: short functions written from the same equations share a lot. "
            "Code an answer cell runs from strings is compared as the code it runs.</p>"
            "<table><thead><tr><th>student</th><th>other</th><th>alike</th><th>of the first</th>"
            f"<th>of the second</th><th>tokens</th><th></th></tr></thead><tbody>{rows}</tbody></table>"
            + (f"<h2>Notes</h2><ul>{noted}</ul>" if noted else "")
            + f"<h2>Side by side (pairs above {threshold:.0%})</h2>{sides}")
    style = ("body{font-family:system-ui,sans-serif;margin:1rem 2rem} td,th{padding:.2rem .6rem;text-align:left}"
             " .sides{display:flex;gap:1rem} .sides pre{flex:1;min-width:0;white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f6f6;padding:.5rem}"
             " .highlight-red{background:#f2b6b6} .highlight-green{background:#b6f2b6}")
    return (f"<!doctype html><html><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
            f"<title>similarity {e(chapter)}</title><style>{style}</style></head>"
            f"<body>{clean(body)}</body></html>")


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
        pairs, notes = compare(args.submissions, args.chapter, args.out, args.threshold)
    except ValueError as err:
        print(f"similarity: {err}", file=sys.stderr)
        return 2
    print(f"{'pair':40} {'alike':>6} {'of the first':>13} {'of the second':>14} {'tokens':>7}")
    for score, a, b, share_a, share_b, tokens in pairs:
        flag = "  <- look" if score >= args.threshold else ""
        print(f"{shown(a) + ' / ' + shown(b):40} {score:6.0%} {share_a:13.0%} {share_b:14.0%} {tokens:7d}{flag}")
    for name, found in sorted(notes.items()):
        print(f"note: {shown(name)}: {'; '.join(found)}")
    print(f"side by side: {args.out / (args.chapter + '.html')} (instructors only; never shown to students)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
