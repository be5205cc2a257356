"""Sentences of a lecture that rest on numbers, written so that they cannot go false silently.

A lecture's Markdown keeps the explanation; a sentence that states a measured number or a
comparison ("faster", "beats", "most", "about two", "until it stops improving") is made in a
code cell instead, from the values themselves::

    from course.claims import claim, ratio

    claim(together < separate,
          f"One batched product took {1000 * together:.2f} ms, {B} separate ones "
          f"{1000 * separate:.2f} ms: the batch is {ratio(separate, together)} faster.")

If the condition holds, the sentence is shown as Markdown (in JupyterLab, in the book and in a
plain Python run, where it is printed); if it does not, the cell raises :class:`ClaimError`
naming the sentence, so the lecture's run (and ``make test``) fails rather than print a claim its
numbers no longer support. The numbers are formatted into the sentence by the caller, so the
error shows them too.

The helpers format numbers honestly and check the words that summarise them:

* :func:`ratio` -- "1.35x", never "1x" (three significant digits);
* :func:`about` -- "about 2" only when every value is within the tolerance of 2;
* :func:`most` -- "5 of 6" only when more than half are true;
* :func:`stopped_improving` -- a training curve whose best epoch came before its last one.

Timing claims should read ``bench/results/`` (measured by a bench with several rounds), or be
worded so that they hold within a shared machine's noise (e.g. only "faster" where the
measured ratio is large).
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

__all__ = ["ClaimError", "claim", "check", "ratio", "about", "most", "stopped_improving", "best_epoch"]


class ClaimError(AssertionError):
    """A lecture's sentence that its numbers no longer support."""


def check(holds, sentence: str, why: str = "") -> str:
    """The sentence if ``holds`` is true; otherwise a :class:`ClaimError` that quotes it
    (with ``why``, the condition in words, when given)."""
    if not bool(holds):
        raise ClaimError(f"The lecture claims: {sentence!r}, but its numbers do not support it"
                         + (f" ({why})" if why else "")
                         + ". Re-measure, or change the sentence to what the numbers say.")
    return sentence


def claim(holds, sentence: str, why: str = "") -> None:
    """Show ``sentence`` as Markdown if ``holds`` is true, else raise :class:`ClaimError`.

    ``holds`` is the comparison the sentence makes (``together < separate``); ``why`` says it in
    words for the error. Returns None, so that a cell ending in a claim shows the sentence once."""
    check(holds, sentence, why)
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
    except ImportError:           # IPython is absent: a plain Python run prints it
        get_ipython = None
    if get_ipython is not None and get_ipython() is not None:
        display(Markdown(sentence))
    else:
        print(sentence)
    return None


def _significant(x: float, digits: int = 3) -> str:
    """x with ``digits`` significant digits, as a plain decimal (1.35, 13.5, 135)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(x)))))
    return f"{x:,.{decimals}f}"


def ratio(a: float, b: float, digits: int = 3) -> str:
    """a / b as "1.35x" (three significant digits: never rounded to "1x")."""
    if b == 0:
        raise ValueError("ratio: the denominator is 0")
    return f"{_significant(a / b, digits)}x"


def about(values, target: float, tolerance: float = 0.25, unit: str = "") -> str:
    """ "about TARGET" (with ``unit``) if every value is within ``tolerance`` (relative) of it;
    else :class:`ClaimError` naming the values. ``values``: one number or several."""
    values = [values] if isinstance(values, (int, float)) else list(values)
    off = [v for v in values if abs(v - target) > tolerance * abs(target)]
    text = f"about {target:g}" + (f" {unit}" if unit else "")
    check(not off, text, f"{', '.join(f'{v:.3g}' for v in off)} differ from {target:g} by more than "
                         f"{tolerance:.0%}")
    return text


def most(flags: Iterable[bool], what: str = "") -> str:
    """ "K of N" (with ``what``) if more than half of ``flags`` are true; else :class:`ClaimError`."""
    flags = [bool(f) for f in flags]
    text = f"{sum(flags)} of {len(flags)}" + (f" {what}" if what else "")
    check(2 * sum(flags) > len(flags), f"most: {text}", "not more than half")
    return text


def best_epoch(curve: Sequence[float]) -> int:
    """The epoch (1-based) of the lowest value of a validation curve (perplexity per epoch)."""
    if not len(curve):
        raise ValueError("best_epoch: an empty curve")
    return min(range(len(curve)), key=lambda i: curve[i]) + 1


def stopped_improving(curve: Sequence[float]) -> bool:
    """Whether a validation curve's best epoch came before its last one: training stopped
    improving (rather than being stopped by the epoch limit while still improving)."""
    return best_epoch(curve) < len(curve)
