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


def _finish(ax, legend=None, title=None, **legend_options):
    """A legend when asked (e.g. the curve is labelled), a title when given; the axes."""
    if legend:
        ax.legend(frameon=False, **legend_options)
    if title:
        ax.set_title(title)
    return ax


#: the smallest tick label drawn (points); denser word axes label every k-th word instead
MIN_TICK_PT = 6.0


def _word_ticks(ax, axis, labels, rotation=0, **options):
    """Tick labels, one per position (words, units), kept legible on a crowded axis.

    The font shrinks to the spacing between ticks, down to MIN_TICK_PT; past that only every
    k-th position is labelled, so labels never overlap.
    """
    labels = list(labels)
    width, height = ax.get_position().size * ax.figure.get_size_inches()
    pitch = 72.0 * (width if axis == "x" else height) / max(len(labels), 1)   # points per tick
    size = min(float(_tick_size()), 0.9 * pitch)
    step = 1 if size >= MIN_TICK_PT else int(np.ceil(MIN_TICK_PT / (0.9 * pitch)))
    size = max(size, MIN_TICK_PT)
    positions = range(0, len(labels), step)
    setter = ax.set_xticks if axis == "x" else ax.set_yticks
    setter(list(positions), labels=[labels[i] for i in positions], rotation=rotation,
           fontsize=size, **options)


def _tick_size():
    import matplotlib as mpl
    from matplotlib.font_manager import FontProperties
    return FontProperties(size=mpl.rcParams["xtick.labelsize"]).get_size_in_points()


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
        _word_ticks(ax, "y", row_labels)
    if col_labels is not None:
        _word_ticks(ax, "x", col_labels, rotation=90)
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
    ax.set_xlabel("word read at step t")
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
    _word_ticks(ax, "x", words, rotation=90)
    _word_ticks(ax, "y", words)
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


def loss_curves(curves: dict, ax=None, title=None, xlabel="update", ylabel="loss", logy=False):
    """One line per run: ``curves`` maps a label to a sequence of values (loss, perplexity).

    logy puts the y axis on a log scale (perplexities spanning orders of magnitude).
    """
    ax = _axes(ax, (5.5, 3.5))
    for label, values in curves.items():
        values = np.asarray(values, dtype=float)
        ax.plot(np.arange(1, len(values) + 1), values, label=str(label), lw=1.5)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if len(curves) > 1:
        ax.legend(frameon=False)
    if title:
        ax.set_title(title)
    return ax


def perplexity_bars(perplexities: dict, floor: float | None = None, ax=None, title=None):
    """Bars of the perplexity of each model (``{label: perplexity}``), lower is better.

    floor: the best perplexity any model can reach (the course corpus's floor,
    from its grammar), drawn as a dashed line across the bars.
    """
    labels = list(perplexities)
    values = np.asarray([perplexities[k] for k in labels], dtype=float)
    ax = _axes(ax, (max(4.0, 1.1 * len(labels) + 1.5), 3.5))
    bars = ax.bar(range(len(labels)), values, color="tab:blue", width=0.6)
    for bar, value in zip(bars, values):
        ax.annotate(f"{value:.1f}", (bar.get_x() + bar.get_width() / 2, value),
                    ha="center", va="bottom", fontsize=9)
    if floor is not None:
        ax.axhline(floor, color="black", ls="--", lw=1.2, label=f"floor {floor:.1f}")
        ax.legend(frameon=False, loc="upper right")
    ax.set_ylim(0, 1.25 * max(values.max(), floor or 0.0))   # headroom for labels and legend
    ax.set_xticks(range(len(labels)), labels=labels, rotation=20, ha="right")
    ax.set_ylabel("perplexity")
    if title:
        ax.set_title(title)
    return ax


def rank_frequency(counts, ax=None, title=None, label=None):
    """Zipf plot: how often the r-th most frequent word occurs, against r (log-log).

    counts: the word counts (any order), e.g. ``collections.Counter(...).values()``.
    """
    freq = np.sort(np.asarray(list(counts), dtype=float))[::-1]
    ax = _axes(ax, (4.5, 3.5))
    ax.loglog(np.arange(1, len(freq) + 1), freq, lw=1.5, label=label)
    ax.set_xlabel("rank of the word")
    ax.set_ylabel("count")
    return _finish(ax, label, title)


def throughput_plot(batch_sizes, tokens_per_s, ax=None, title=None, label=None):
    """Training speed against batch size (tutorial section 6.5): tokens per second
    on a log-2 axis of batch sizes, each point labelled with its speed-up over the first."""
    sizes = np.asarray(batch_sizes, dtype=float)
    speed = np.asarray(tokens_per_s, dtype=float)
    if sizes.shape != speed.shape or sizes.ndim != 1:
        raise ValueError(f"need one speed per batch size, got {sizes.shape} sizes and {speed.shape} speeds")
    ax = _axes(ax, (5.0, 3.5))
    ax.plot(sizes, speed, marker="o", lw=1.5, label=label)
    for size, value in zip(sizes, speed):
        ax.annotate(f"{value / speed[0]:.1f}x", (size, value), textcoords="offset points",
                    xytext=(0, 6), ha="center", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, labels=[f"{int(s)}" for s in sizes])
    ax.set_ylim(0, 1.15 * speed.max())
    ax.set_xlabel("batch size (sentences)")
    ax.set_ylabel("training tokens / s")
    return _finish(ax, label, title)


def depth_plot(depths, values: dict, ylabel="perplexity", floor=None, logy=False, ax=None, title=None,
               ymax=None):
    """A measure against the number of stacked layers, one line per variant.

    depths: the layer counts (x axis); values: ``{label: [one value per depth]}``
    (e.g. "no residual", "ResV", "ResV + ResL"); floor: a dashed line (the
    corpus's floor perplexity), if given; ymax: the top of the y axis, so that one
    runaway value does not flatten the others: a value above it is written at the top.
    """
    depths = np.asarray(depths)
    ax = _axes(ax, (5.0, 3.5))
    for label, ys in values.items():
        ys = np.asarray(ys, dtype=float)
        if ys.shape != depths.shape:
            raise ValueError(f"{label}: {ys.shape[0]} values for {depths.shape[0]} depths")
        line, = ax.plot(depths, ys, marker="o", lw=1.5, label=label)
        for x, y in zip(depths, ys):
            if ymax is not None and y > ymax:
                ax.annotate(f"{y:.0f} ↑", (x, ymax), xytext=(0, -12), textcoords="offset points",
                            ha="center", color=line.get_color(), fontsize=9)
    if floor is not None:
        ax.axhline(floor, color="black", ls="--", lw=1.2, label=f"floor {floor:.1f}")
    if logy:
        ax.set_yscale("log")
    if ymax is not None:
        shown = [y for ys in values.values() for y in ys if y <= ymax] + ([floor] if floor is not None else [])
        ax.set_ylim(min(shown) - 0.05 * (ymax - min(shown)), ymax)
    ax.set_xticks(depths)
    ax.set_xlabel("layers")
    ax.set_ylabel(ylabel)
    ax.legend(frameon=False)
    if title:
        ax.set_title(title)
    return ax


def gradient_by_distance(curves: dict, ax=None, title=None,
                         ylabel=r"$\|\partial \ell_t / \partial h_{t-k}\|$"):
    """How far back a gradient reaches: its norm against the distance k, log scale.

    curves: ``{label: values}``, ``values[k]`` the gradient norm k steps before the
            loss (k = 0 is the step the loss is computed at). Lines that shrink
            geometrically are straight and falling (vanishing gradients), rising
            ones are exploding gradients, flat ones carry the gradient unchanged.
    ylabel: what is measured, e.g. the gradient with respect to h or to the cell c.
    """
    ax = _axes(ax, (5.5, 3.5))
    for label, values in curves.items():
        values = np.asarray(values, dtype=float)
        ax.semilogy(np.arange(len(values)), values, label=str(label), lw=1.5)
    ax.set_xlabel("distance k (steps back from the loss)")
    ax.set_ylabel(ylabel)
    return _finish(ax, len(curves) > 1, title, fontsize=9)


def unit_lines(curves: dict, positions=None, labels=None, marks=None, ax=None, title=None,
               xlabel="step", ylabel="value"):
    """Values in [0, 1] (gates, kept fractions) against a position, on the fixed scale [0, 1].

    curves:    ``{label: values}``, one line each, all of the same length.
    positions: x values (default 0, 1, 2, ...); labels: tick labels for them (e.g. the words).
    marks:     ``{position: text}``, dotted vertical lines (e.g. an agreement's cue and target).
    """
    length = len(next(iter(curves.values())))
    ax = _axes(ax, (max(6.0, 0.18 * length + 1.5), 3.4))     # room for a word per position
    xs = np.arange(length) if positions is None else np.asarray(positions)
    for label, values in curves.items():
        values = np.asarray(values, dtype=float)
        if values.shape != xs.shape:
            raise ValueError(f"{label}: {values.shape[0]} values for {xs.shape[0]} positions")
        ax.plot(xs, values, marker="o" if length <= 40 else None, ms=3, lw=1.5, label=str(label))
    middle = (xs[0] + xs[-1]) / 2
    for k, (position, text) in enumerate(sorted((marks or {}).items())):
        ax.axvline(position, color="grey", ls=":", lw=1)
        # on the side of the line away from the nearer edge, one line lower per mark: no two collide
        right_half = position > middle
        ax.annotate(text, (position, 1.0), xytext=(-3 if right_half else 3, -10 - 11 * k),
                    textcoords="offset points", fontsize=8, ha="right" if right_half else "left",
                    bbox=dict(facecolor="white", edgecolor="none", pad=0.5), zorder=5)
    if labels is not None and positions is None:
        _word_ticks(ax, "x", labels, rotation=90)
    elif labels is not None:
        ax.set_xticks(xs, labels=list(labels), rotation=90)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return _finish(ax, len(curves) > 1, title, fontsize=9)


def sample_spread(words, sample_probs, deterministic=None, ax=None, title=None):
    """The probability a model gives each word over K stochastic (dropout) passes.

    words:         the T predicted words (tick labels; ``</s>`` included).
    sample_probs:  ``(K, T)`` probabilities, one row per pass with dropout: dots.
    deterministic: ``(T,)`` probabilities of the pass without dropout: crosses.
    The mean over the passes (the Monte Carlo estimate) is a short bar; the
    y axis is the fixed probability scale [0, 1].
    """
    sample_probs = np.asarray(sample_probs, dtype=float)
    T = len(words)
    if sample_probs.ndim != 2 or sample_probs.shape[1] != T:
        raise ValueError(f"sample_probs must be (K, {T}) for {T} words, got {sample_probs.shape}")
    ax = _axes(ax, (max(5.0, 0.55 * T + 1.5), 3.5))
    K = sample_probs.shape[0]
    jitter = np.linspace(-0.18, 0.18, K) if K > 1 else np.zeros(1)
    for k in range(K):
        ax.plot(np.arange(T) + jitter[k], sample_probs[k], "o", ms=2.5, alpha=0.45, color="tab:blue",
                label=f"{K} passes with dropout" if k == 0 else None)
    ax.hlines(sample_probs.mean(axis=0), np.arange(T) - 0.3, np.arange(T) + 0.3, color="tab:orange",
              lw=2.2, label="their mean (Monte Carlo)")
    if deterministic is not None:
        ax.plot(np.arange(T), np.asarray(deterministic, dtype=float), "x", ms=7, mew=2, color="black",
                label="one pass without dropout")
    ax.set_xticks(range(T), labels=list(words), rotation=45, ha="right")
    ax.set_ylim(0.0, 1.02)
    ax.set_ylabel("probability of the word")
    ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if title:
        ax.set_title(title)
    return ax


def mc_samples_plot(samples, perplexities, deterministic, spread=None, ax=None, title=None):
    """Perplexity against the number K of Monte Carlo dropout samples (Odyssey Figure 1).

    samples:       the K values (x axis, log-2 scale).
    perplexities:  one perplexity per K (the mean, if several repeats were made).
    deterministic: the perplexity of the single pass without dropout: a dashed line.
    spread:        optional ``(low, high)`` per K (e.g. the range over repeats): a band.
    """
    ks = np.asarray(samples, dtype=float)
    values = np.asarray(perplexities, dtype=float)
    if ks.shape != values.shape or ks.ndim != 1:
        raise ValueError(f"need one perplexity per K, got {ks.shape} and {values.shape}")
    ax = _axes(ax, (5.0, 3.5))
    if spread is not None:
        low, high = (np.asarray(v, dtype=float) for v in spread)
        ax.fill_between(ks, low, high, color="tab:blue", alpha=0.2, lw=0, label="range over repeats")
    ax.plot(ks, values, marker="o", lw=1.5, color="tab:blue", label="Monte Carlo average of K passes")
    ax.axhline(deterministic, color="black", ls="--", lw=1.2,
               label=f"deterministic pass {deterministic:.2f}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, labels=[f"{int(k)}" for k in ks])
    ax.set_xlabel("samples K")
    ax.set_ylabel("perplexity")
    ax.legend(frameon=False, fontsize=9)
    if title:
        ax.set_title(title)
    return ax


def budget_curves(runs: dict, floor=None, thresholds=None, ax=None, title=None):
    """Held-out perplexity against training time, one line per recipe.

    runs:       ``{label: (seconds, perplexities)}``, e.g. CPU seconds of training
                at each evaluation and the perplexity measured there.
    floor:      the corpus's floor perplexity: a solid black line.
    thresholds: ``{label: perplexity}`` (e.g. grading thresholds): dotted lines.
    """
    ax = _axes(ax, (6.0, 3.8))
    for label, (seconds, values) in runs.items():
        seconds, values = np.asarray(seconds, dtype=float), np.asarray(values, dtype=float)
        if seconds.shape != values.shape:
            raise ValueError(f"{label}: {seconds.shape[0]} times for {values.shape[0]} perplexities")
        ax.plot(seconds, values, marker="o", ms=3, lw=1.5, label=str(label))
    for label, value in (thresholds or {}).items():
        ax.axhline(value, color="grey", ls=":", lw=1)
        # at the left, above its line, on a white patch: no curve strikes the label through
        ax.annotate(str(label), (0.0, value), xycoords=("axes fraction", "data"), xytext=(4, 2),
                    textcoords="offset points", ha="left", va="bottom", fontsize=8, color="dimgrey",
                    bbox=dict(facecolor="white", edgecolor="none", pad=0.5), zorder=5)
    if floor is not None:
        ax.axhline(floor, color="black", lw=1.2, label=f"floor {floor:.1f}")
    ax.set_yscale("log")
    # a log axis over less than a decade gets one labelled tick by default: label 1, 2 and 5 x 10^k
    from matplotlib import ticker
    ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set_xlabel("training time (CPU seconds)")
    ax.set_ylabel("held-out perplexity")
    ax.legend(frameon=False, fontsize=9)
    if title:
        ax.set_title(title)
    return ax
