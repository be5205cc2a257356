"""Equation numbers in the lectures: where each is displayed, and links from where it is cited.

A lecture displays an equation of a source text with ``\\tag{N}`` and cites it in prose as
"eq 59", "eqs 56-59", "tutorial eq 61", "[T] eq 47", "[WS] eq 9", "[RAN] eqs 6-7",
"their eq 6" or "(D3)". Every number is read in a *namespace*, the text it comes from:

=====  =========================================================================
T      the tutorial chapter (the default everywhere but lectures 08 and 11)
WS     the weighted-sum paper, workshop version (the default in lecture 08)
WS2    the weighted-sum paper, later version
RAN    the recurrent additive networks paper
D      the course's own dropout equations of lecture 09, written (D1)...(D5)
O      the "Odyssey" paper, cited in lecture 07 as "their eq 6"
A      the course's own attention equations of lecture 11 (causal self-attention, multi-head), the
       default there: no seed text numbers them
=====  =========================================================================

A tag may name the namespace and give several names to one display:
``\\tag{[WS] 11 = [WS2] 9}``. The book build gives every displayed equation an anchor
(``eq-t-59``), and :func:`link_citations` turns each citation into a link to it. An equation
cited but displayed nowhere stops the build (:class:`UnresolvedCitations`), unless
:data:`SAME_AS` names a displayed equation the lectures say is the same one.
"""
from __future__ import annotations

import re

from course.book import DEFAULT_NAMESPACE  # noqa: E402  (lecture number -> namespace of a bare "eq N")

NAMESPACES = ("T", "WS2", "WS", "RAN", "D", "O", "A")
THEIR = {"07": "O"}                       # lecture number -> the text "their eq N" means

#: equations the lectures cite and say are the same as one they display
SAME_AS = {
    ("T", "53"): ("T", "45"),      # lecture 03: "the softmax (eq 53, the same as eq 45)"
    ("WS", "1"): ("T", "44"),      # lecture 08: "the S-RNN of [WS] eq 1 ([T] eq 44, chapter 02)"
    ("WS2", "8"): ("WS", "8"),     # lecture 08: "its eq 8 is [WS] eq 8"
    ("RAN", "3"): ("WS", "8"),     # lecture 08: "[RAN] eq 3 is the same sum"
    ("RAN", "4"): ("WS", "2"),     # lecture 08: "the LSTM ([RAN] eq 4)", displayed as [WS] eqs 2-7
    ("RAN", "5"): ("WS", "9"),     # lecture 08: "[RAN] eq 5: this *is* LSTM - S-RNN" ([WS] eq 9)
    ("RAN", "6"): ("T", "56"),     # lecture 08: "the GRU ([RAN] eqs 6-7)", displayed as [T] eqs 56-59
    ("RAN", "7"): ("T", "56"),
    ("O", "6"): ("T", "51"),       # lecture 07: h_t = o_t * tanh(c_t) "(their eq 6)" is [T] eq 51
}

TAG = re.compile(r"\\tag\{([^{}]*)\}")
_NAMED = re.compile(r"^\s*(?:\[(?P<ns>[A-Z0-9]+)\]\s*)?(?P<label>[A-Z]?)(?P<num>\d+)\s*$")

# Prose citations. A list of numbers or ranges follows "eq"/"eqs": "47-49 and 54-55".
_NUM = r"\d+(?:\s*[-–]\s*\d+)?"
CITATION = re.compile(
    r"(?P<prefix>\[(?P<ns>" + "|".join(NAMESPACES) + r")\]\s+|(?P<tutorial>tutorial\s+)|(?P<their>their\s+))?"
    r"(?P<word>\b[Ee]qs?\.?)\s+"
    r"(?P<items>" + _NUM + r"(?:(?:,\s*|\s+and\s+|,\s+and\s+)" + _NUM + r")*)\b")
DROPOUT = re.compile(r"\(D(?P<num>\d+)\)")
_ITEM = re.compile(r"(?P<first>\d+)(?:\s*[-–]\s*(?P<last>\d+))?")

# Markdown that is not prose: code, math, links, raw HTML, headings. Citations there stay as they are.
_PROTECTED = re.compile(
    r"```.*?```|`[^`\n]*`|\$\$.*?\$\$|\$[^$\n]*\$|!?\[[^\]\n]*\]\([^)\n]*\)|<[^>\n]*>|^#+ [^\n]*$",
    re.S | re.M)


class UnresolvedCitations(ValueError):
    """Equations cited in a lecture that no lecture displays."""


def anchor(key, chapter=None):
    """The HTML id of a displayed equation: ``eq-t-59``; ``eq-t-59-03`` for a second display."""
    ns, num = key
    base = f"eq-{ns.lower()}-{num}"
    return base if chapter is None else f"{base}-{chapter}"


def parse_tag(text: str, chapter: str) -> list[tuple[str, str]]:
    """The keys of one ``\\tag{...}``: ``"[WS] 11 = [WS2] 9"`` -> ``[("WS", "11"), ("WS2", "9")]``."""
    keys = []
    for part in text.split("="):
        m = _NAMED.match(part)
        if not m:
            raise ValueError(f"lecture {chapter}: cannot read the equation tag \\tag{{{text}}}; "
                             "write it as \\tag{59}, \\tag{[WS] 8} or \\tag{D1}")
        ns = m["ns"] or m["label"] or DEFAULT_NAMESPACE.get(chapter, "T")
        if ns not in NAMESPACES:
            raise ValueError(f"lecture {chapter}: \\tag{{{text}}} names [{ns}], not one of {NAMESPACES}")
        keys.append((ns, m["num"]))
    return keys


def displayed(markdown: str, chapter: str) -> list[tuple[str, str]]:
    """Every equation key that a lecture's markdown displays with a tag, in order."""
    keys = []
    for block in re.findall(r"\$\$(.*?)\$\$", markdown, re.S):
        for tag in TAG.findall(block):
            keys.extend(parse_tag(tag, chapter))
    return keys


def citations(markdown: str, chapter: str):
    """Yield ``(start, end, [(text, key), ...])`` for every citation in the prose of ``markdown``.

    Each ``(text, key)`` is one piece of the citation to link: ``("eqs 47-49", ("T", "47"))``,
    then ``("54-55", ("T", "54"))``; the keys of every number of a range are checked, the link
    goes to the first.
    """
    for start, end, text in _prose(markdown):
        for m in CITATION.finditer(text):
            ns = (m["ns"] or ("T" if m["tutorial"] else None)
                  or (THEIR.get(chapter) if m["their"] else None) or DEFAULT_NAMESPACE.get(chapter, "T"))
            pieces, offset = [], m.start("items")
            for item in _ITEM.finditer(m["items"]):
                first, last = int(item["first"]), int(item["last"] or item["first"])
                keys = [(ns, str(n)) for n in range(first, last + 1)]
                left = m.start() if not pieces else offset + item.start()
                pieces.append((text[left:offset + item.end()], keys))
            yield start + m.start(), start + m.end(), pieces
        for m in DROPOUT.finditer(text):
            yield start + m.start(), start + m.end(), [(m[0], [("D", m["num"])])]


def _prose(markdown: str):
    """(start, end, text) of the stretches of ``markdown`` outside code, math, links and HTML."""
    at = 0
    for m in _PROTECTED.finditer(markdown):
        yield at, m.start(), markdown[at:m.start()]
        at = m.end()
    yield at, len(markdown), markdown[at:]


def resolve(key, targets: dict):
    """The (chapter, anchor) of a key, through :data:`SAME_AS`; None when nothing displays it."""
    key = SAME_AS.get(key, key)
    return targets.get(key)


def link_citations(markdown: str, chapter: str, targets: dict, here: dict) -> tuple[str, list]:
    """Markdown with every citation made a link; and the citations that resolve nowhere.

    targets: key -> (chapter, anchor) of the first display in the book; here: key -> anchor
    of the displays in this lecture (a citation prefers the display beside it).
    """
    out, at, missing = [], 0, []
    for start, end, pieces in sorted(citations(markdown, chapter), key=lambda c: c[0]):
        out.append(markdown[at:start])
        cursor = start
        for text, keys in pieces:
            unresolved = [k for k in keys if resolve(k, targets) is None and k not in here]
            missing.extend(unresolved)
            left = markdown.index(text, cursor)
            out.append(markdown[cursor:left])
            key = SAME_AS.get(keys[0], keys[0])
            target = here.get(key) or (resolve(keys[0], targets) or (None, None))[1]
            out.append(f"[{text}](#{target})" if target and not unresolved else text)
            cursor = left + len(text)
        out.append(markdown[cursor:end])
        at = end
    out.append(markdown[at:])
    return "".join(out), missing
