"""The course's one plotting module: one style, fixed colour scales.

Every figure of the lectures and exercises comes from here, so that the same
quantity always looks the same: gates, probabilities and other values in
[0, 1] use :data:`UNIT_CMAP` on the fixed scale [0, 1]; weighted-sum weights
use the fixed scale [0, sqrt(d_h)], the largest L2 norm a vector of d_h
weights in [0, 1] can have. Functions take an optional ``ax`` and return it,
so they compose into subplots; with ``ax=None`` they make a new figure.

Pyplot is imported lazily: choose a backend (``matplotlib.use("Agg")`` on a
headless machine) before the first plot if you need one.
"""
from __future__ import annotations

import numpy as np

#: colour map of everything in [0, 1] (gates, probabilities, weights)
UNIT_CMAP = "viridis"

STYLE = {
    "figure.dpi": 100,
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "axes.grid": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "image.cmap": UNIT_CMAP,
}


def use_style():
    """Apply the course style to matplotlib (idempotent)."""
    import matplotlib as mpl
    mpl.rcParams.update(STYLE)


def _axes(ax, figsize):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt
    use_style()
    _, ax = plt.subplots(figsize=figsize)
    return ax


def _colorbar(ax, image, label):
    bar = ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    bar.set_label(label)
    return bar


def unit_heatmap(values, row_labels=None, col_labels=None, ax=None, title=None, label="value"):
    """Heatmap of values in [0, 1] (gates, probabilities) on the fixed scale [0, 1].

    values: ``(rows, cols)`` array. Labels, when given, become tick labels.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"unit_heatmap needs a 2-d array, got shape {values.shape}")
    ax = _axes(ax, (max(4, 0.35 * values.shape[1] + 2), max(3, 0.3 * values.shape[0] + 1.5)))
    image = ax.imshow(values, cmap=UNIT_CMAP, vmin=0.0, vmax=1.0, aspect="auto",
                      interpolation="nearest")
    if row_labels is not None:
        ax.set_yticks(range(values.shape[0]), labels=list(row_labels))
    if col_labels is not None:
        ax.set_xticks(range(values.shape[1]), labels=list(col_labels), rotation=90)
    if title:
        ax.set_title(title)
    _colorbar(ax, image, label)
    return ax


def gate_heatmap(gate, words, ax=None, title=None, name="gate"):
    """A gate's values over a sentence: ``gate`` is ``(T, d_h)``; rows = units, columns = words."""
    gate = np.asarray(gate, dtype=float)
    if gate.shape[0] != len(words):
        raise ValueError(f"gate has {gate.shape[0]} steps but {len(words)} words were given")
    ax = unit_heatmap(gate.T, col_labels=words, ax=ax, title=title, label=name)
    ax.set_ylabel("unit")
    return ax


def weight_heatmap(weights, words, ax=None, title=None, vmax=None):
    """L2 norm of the weights w_j^t over (context word j, current word t).

    As in the weighted-sum paper's Table 4: each column is the current word t,
    each row the context word j, darkness the L2 norm of the vector w_j^t.

    weights: ``(T, T, d_h)`` indexed ``[t, j]`` (the layout of
             ``memory_weights``), or ``(T, T)`` norms already taken, same indexing.
    words:   the T words (tick labels of both axes).
    vmax:    top of the colour scale; default sqrt(d_h) for a 3-d array (the
             largest possible norm, so plots of one model compare), else the
             largest value.
    """
    weights = np.asarray(weights, dtype=float)
    if weights.ndim == 3:
        norms = np.linalg.norm(weights, axis=-1)
        top = np.sqrt(weights.shape[-1]) if vmax is None else vmax
    elif weights.ndim == 2:
        norms = weights
        top = (float(norms.max()) or 1.0) if vmax is None else vmax
    else:
        raise ValueError(f"weights must be (T, T, d_h) or (T, T), got shape {weights.shape}")
    T = len(words)
    if norms.shape != (T, T):
        raise ValueError(f"weights cover {norms.shape[0]} steps but {T} words were given")
    ax = _axes(ax, (0.45 * T + 2.5, 0.4 * T + 1.5))
    # rows: context word j, columns: current word t -> transpose of [t, j];
    # blank out j > t (a left-to-right model has no weight on later words)
    shown = np.ma.masked_where(np.tril(np.ones((T, T), dtype=bool), k=-1), norms.T)
    import matplotlib as mpl
    cmap = mpl.colormaps["Greys"].with_extremes(bad="white")
    image = ax.imshow(shown, cmap=cmap, vmin=0.0, vmax=top, aspect="equal",
                      interpolation="nearest")
    ax.set_xticks(range(T), labels=list(words), rotation=90)
    ax.set_yticks(range(T), labels=list(words))
    ax.set_xlabel("current word t")
    ax.set_ylabel("context word j")
    if title:
        ax.set_title(title)
    _colorbar(ax, image, r"$\|w_j^t\|_2$")
    return ax


def influence_arrows(words, most_influential, ax=None, title=None):
    """Arrows from each word to its most influential predecessor (RAN paper, Figure 2).

    words:            the T words, drawn left to right.
    most_influential: ``(T,)`` ints, the index j < t of word t's most
                      influential predecessor, or -1 for none (e.g. at t = 0).
    """
    most_influential = np.asarray(most_influential, dtype=int)
    T = len(words)
    if most_influential.shape != (T,):
        raise ValueError(f"most_influential has shape {most_influential.shape}, expected ({T},)")
    ax = _axes(ax, (0.8 * T + 1, 2.5))
    from matplotlib.patches import FancyArrowPatch
    from matplotlib.path import Path
    tallest = 1
    for t, j in enumerate(most_influential):
        if j < 0:
            continue
        if not 0 <= j < t:
            raise ValueError(f"word {t} points to {j}; a predecessor must satisfy 0 <= j < t")
        span = t - j
        tallest = max(tallest, span)
        # a quadratic Bezier arc in data coordinates, as high as half its span
        arc = Path([(t, 0.0), ((t + j) / 2, float(span)), (j, 0.0)],
                   [Path.MOVETO, Path.CURVE3, Path.CURVE3])
        ax.add_patch(FancyArrowPatch(path=arc, arrowstyle="-|>", mutation_scale=12,
                                     color="tab:blue", lw=1.2))
    ax.set_xlim(-0.6, T - 0.4)
    ax.set_ylim(-0.1, tallest / 2 + 0.3)
    ax.set_xticks(range(T), labels=list(words), rotation=45, ha="right")
    ax.set_yticks([])
    for side in ("left", "top", "right"):
        ax.spines[side].set_visible(False)
    if title:
        ax.set_title(title)
    return ax
