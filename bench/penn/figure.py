"""The figure beside the results (bench/results/ptb.png): valid perplexity after each epoch."""
from __future__ import annotations

import math
from pathlib import Path

from penn.models import BASE_MODELS, CHANGED, LOWER_LR, MODELS, PAPER_NAME
from penn.papers import ZAREMBA_SMALL

PLOT_TOP = 1000      # valid perplexity above which the figure cuts a curve off


def plot_curves(records: dict, path: Path) -> Path | None:
    """Valid perplexity after each epoch, one line per run, Zaremba's 120.7 dashed.

    One colour per cell; its runs at a lower learning rate are dashed, then dotted. Values
    above PLOT_TOP are cut off (their thousands would flatten the lines that matter, between
    100 and 300), and runs with none below it are left out."""
    names = [n for n in MODELS if any(r["valid_ppl"] <= PLOT_TOP for r in records.get(n, {}).get("epochs", []))]
    if not names:
        return None
    import matplotlib
    matplotlib.use("Agg")
    from course import plots
    curves = {MODELS[n][1]: [r["valid_ppl"] if math.isfinite(r["valid_ppl"]) else math.nan
                             for r in records[n]["epochs"]] for n in names}
    ax = plots.loss_curves(curves, xlabel="epoch", ylabel="valid perplexity", logy=True,
                           title=f"PTB, Zaremba's small budget (cut at {PLOT_TOP:,}; runs entirely above it left out)")
    bases = list(BASE_MODELS)
    colours = matplotlib.colormaps["tab10"].colors
    for name, line in zip(names, ax.lines):
        base = PAPER_NAME.get(name, name)
        variant = 0 if name == base else 1 + LOWER_LR[base].index(CHANGED[name]["lr"])
        line.set(color=colours[bases.index(base) % len(colours)], ls=("-", "--", ":")[variant], marker="o",
                 markersize=4)
    from matplotlib.ticker import NullFormatter, ScalarFormatter
    ax.set_ylim(top=PLOT_TOP)
    ax.set_yticks([t for t in (100, 120, 150, 200, 300, 500, 1000) if t <= PLOT_TOP])
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(range(1, max(len(c) for c in curves.values()) + 1))
    ax.axhline(ZAREMBA_SMALL["valid"], color="black", ls="--", lw=1.0)
    ax.annotate(f"Zaremba small LSTM, valid {ZAREMBA_SMALL['valid']}", (0.02, ZAREMBA_SMALL["valid"]),
                xycoords=("axes fraction", "data"), textcoords="offset points", xytext=(0, -10), fontsize=8)
    ax.legend(frameon=False, fontsize=7, loc="upper right")
    ax.figure.set_size_inches(7.5, 4.5)
    ax.figure.tight_layout()
    ax.figure.savefig(path, dpi=120)
    return path
