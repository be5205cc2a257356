"""The results page (bench/results/ptb.md), rebuilt from whatever runs have records: the
results and per-epoch tables, whether the papers' pattern holds, and tables(), which puts
them together with the growth and speed sections and the papers' texts."""
from __future__ import annotations

import json
from pathlib import Path

from common import table
from penn.growth import growth_table
from penn.models import CHANGED, MODELS, PAPER_NAME, SMALL, config_of
from penn.papers import PUBLISHED, PUBLISHED_TEXT, SETUP_TEXT, ZAREMBA_SMALL
from penn.speed import speed_table
from penn.training import RUNS, diverged, learning_rate, load_records


def _fmt(x, digits=1):
    return "" if x is None else (f"{x:.{digits}f}" if isinstance(x, float) else str(x))


def _minutes(seconds):
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def _params(record: dict) -> str:
    """All parameters, and in brackets the recurrent layers' alone (the RAN paper counts those)."""
    total = record["params"]
    vocab, config = record.get("vocab"), record.get("config")
    if not vocab or not config:
        return f"{total:,}"
    # embeddings (vocab x embed) and the softmax layer (vocab x hidden + vocab biases)
    recurrent = total - vocab * config["embed"] - vocab * (config["hidden"] + 1)
    return f"{total:,} ({recurrent:,})"


def results_table(records: dict, epochs: int) -> str:
    header = ["model", "cell", "params (recurrent)", "epochs", "valid ppl", "test ppl", "train tokens / s",
              "tokens / CPU s", "wall time", "published (PTB, their configuration)"]
    published = {
        "lstm": f"Zaremba small (same configuration): valid {ZAREMBA_SMALL['valid']}, test "
                f"{ZAREMBA_SMALL['test']}; WS medium {PUBLISHED['ws_medium']['lstm']}, large "
                f"{PUBLISHED['ws_large']['lstm']}; RAN {PUBLISHED['ran']['lstm']}",
    }
    for name in MODELS:
        if name == "lstm":
            continue
        key, bits = PAPER_NAME.get(name, name), []
        if key in PUBLISHED["ws2_medium"]:
            bits.append(f"WS medium {PUBLISHED['ws2_medium'][key]}, large {PUBLISHED['ws2_large'][key]}")
        if key in PUBLISHED["ran"]:
            bits.append(f"RAN {PUBLISHED['ran'][key]}")
        published[name] = "; ".join(bits)
    rows = []
    for name, (_, label) in MODELS.items():
        record = records.get(name)
        if record is None or not record["epochs"]:
            rows.append([label, MODELS[name][0], "", "not run", "", "", "", "", "", published[name]])
            continue
        done = record["epochs"][:epochs]
        last = done[-1]
        wall = sum(r["train_seconds"] + r["eval_seconds"] for r in done)
        tokens = sum(r["train_tokens"] for r in done)
        speed_ = tokens / sum(r["train_seconds"] for r in done)
        cpu = sum(r.get("train_cpu_seconds", 0) for r in done)
        shown = f"{len(done)}" if len(done) >= epochs else f"{len(done)} of {epochs}"
        test = f"**{last['test_ppl']:.1f}**" + (" (diverged)" if diverged(last, record) else "")
        rows.append([label, record["cell"], _params(record), shown, _fmt(last["valid_ppl"]), test, f"{speed_:,.0f}", f"{tokens / cpu:,.0f}" if cpu else "",
                     _minutes(wall), published[name]])
    return table(header, rows)


def curves_table(records: dict, epochs: int) -> str:
    names = [n for n in MODELS if n in records and records[n]["epochs"]]
    if not names:
        return "(no epochs finished yet)"
    rows = []
    for epoch in range(1, epochs + 1):
        row = [epoch, f"{learning_rate(epoch):.3g}"]
        for name in names:
            r = records[name]["epochs"][epoch - 1] if epoch <= len(records[name]["epochs"]) else None
            row.append(f"{r['valid_ppl']:.1f} / {r['test_ppl']:.1f}" if r else "")
        rows.append(row)
    return table(["epoch", "lr"] + [MODELS[n][1] for n in names], rows)


def pattern(records: dict, epochs: int) -> str:
    """The papers' two claims, checked on whatever runs are complete."""
    final = {n: r["epochs"][epochs - 1]["test_ppl"] for n, r in records.items() if len(r["epochs"]) >= epochs}
    if "lstm" not in final:
        return ("The pattern cannot be judged yet: the LSTM run has not finished its "
                f"{epochs} epochs.")
    lstm = final["lstm"]
    lines = [f"Test perplexity after {epochs} epoch(s), relative to the LSTM's {lstm:.1f}, beside the same "
             "ratio in the papers' PTB tables:", ""]
    rows = []
    for name in MODELS:
        if name == "lstm":
            continue
        key = PAPER_NAME.get(name, name)
        if key in PUBLISHED["ws2_medium"]:       # the weighted-sum paper's table, else the RAN paper's
            ref = [PUBLISHED[f"ws2_{size}"][key] / float(PUBLISHED[f"ws2_{size}"]["lstm"].split()[0]) - 1
                   for size in ("medium", "large")]
            published = f"{ref[0]:+.0%} (medium), {ref[1]:+.0%} (large)"
        else:
            published = f"{PUBLISHED['ran'][key] / PUBLISHED['ran']['lstm'] - 1:+.0%} (RAN Table 1)"
        if name not in records or not records[name]["epochs"]:
            here = "not run"
        elif name not in final:
            done = records[name]["epochs"]
            here = f"only {len(done)} of {epochs} epochs" + (" (diverged)" if diverged(done[-1], records[name]) else "")
        elif diverged(records[name]["epochs"][epochs - 1], records[name]):
            here = f"{final[name]:,.0f}: diverged"
        else:
            here = f"{final[name]:.1f} ({final[name] / lstm - 1:+.0%})"
        rows.append([MODELS[name][1], here, published])
    lines.append(table(["model", "here: test ppl (vs LSTM)", "published (vs LSTM)"], rows))
    verdicts = []
    for name in ("srnn", "srnn-lr0.1"):
        if name not in final:
            continue
        claim = f"{MODELS[name][1]} far behind (criterion: > 20% above the LSTM; the papers: +60 to +68%): "
        if diverged(records[name]["epochs"][epochs - 1], records[name]):
            verdicts.append(claim + "**not judged**: the run diverged (worse than a uniform guess), "
                            "which says the S-RNN is hard to train here, not how far behind it is.")
        else:
            holds = final[name] > 1.2 * lstm
            verdicts.append(claim + f"**{'holds' if holds else 'does not hold'}** ({final[name] / lstm - 1:+.0%}).")
    ablations = [n for n in ("lstm-srnn", "lstm-srnn-out", "lstm-srnn-hidden") if n in final]
    if ablations:
        worst = max(abs(final[n] / lstm - 1) for n in ablations)
        verdicts.append(f"Ablations of the S-RNN close to the LSTM (criterion: within 10%; the papers: "
                        f"-4% to +5%): **{'holds' if worst <= 0.10 else 'does not hold'}** for "
                        f"{len(ablations)} of 3 finished (largest gap {worst:.0%}).")
    for base in ("gru", "ran-identity", "ran-tanh"):
        verdicts.append(_additive_verdict(base, final, records, epochs))
    return "\n".join(lines + [""] + [f"- {v}" for v in verdicts])


def _additive_verdict(base: str, final: dict, records: dict, epochs: int) -> str:
    """The RAN paper's claim for one cell, judged on its best run that trained, at whichever
    learning rate tried (a lower one is a changed budget, and the verdict says so)."""
    lstm = final["lstm"]
    family = [base] + [c for c in CHANGED if PAPER_NAME[c] == base]
    tried = [n for n in family if n in final]
    trained = [n for n in tried if not diverged(records[n]["epochs"][epochs - 1], records[n])]
    stopped = [n for n in family if n not in final and records.get(n, {}).get("epochs")
               and diverged(records[n]["epochs"][-1], records[n])]      # diverged before this epoch
    others = []                                                         # the runs short of this epoch
    for n in family:
        done = records.get(n, {}).get("epochs") or []
        if n not in final:
            others.append(f"{config_of(n).training.lr:g}, " + ("not run" if not done else f"diverged in epoch "
                          f"{len(done)}" if n in stopped else f"{len(done)} of {epochs} epochs"))
    elsewhere = f" Other runs: learning rate {'; '.join(others)}." if others else ""
    claim = (f"{MODELS[base][1]} as good as the LSTM or better (criterion: at most 10% above it; "
             f"the RAN paper: {PUBLISHED['ran'][base] / PUBLISHED['ran']['lstm'] - 1:+.0%}, with Adam "
             "and dropout): ")
    if not tried:
        return claim + ("**not judged**: every run of it so far diverged." if stopped else "not finished.") + elsewhere
    if not trained:
        return claim + "**not judged**: every run of it diverged." + elsewhere
    best = min(trained, key=lambda n: final[n])
    holds = final[best] <= 1.1 * lstm
    at = f"learning rate {config_of(best).training.lr:g}" + (", a changed budget" if best in CHANGED else "")
    return (claim + f"**{'holds' if holds else 'does not hold'}** ({final[best] / lstm - 1:+.0%} at {at})."
            + elsewhere)


def common_epochs(records: dict, epochs: int) -> int:
    """The most epochs every cell has had in one of its runs (the budget they all had): each
    cell counts its longest run at any learning rate; a run that diverged is left out, since
    it would not be continued."""
    longest = {}
    for name, r in records.items():
        if r["epochs"] and not diverged(r["epochs"][-1], r):
            base = PAPER_NAME.get(name, name)
            longest[base] = max(longest.get(base, 0), len(r["epochs"]))
    return min([epochs] + list(longest.values())) if longest else 0


def patterns(records: dict, epochs: int) -> str:
    """The pattern after the full schedule and, while runs are short of it, at the budget all share."""
    full = f"### After all {epochs} epochs\n\n" + pattern(records, epochs)
    shared = common_epochs(records, epochs)
    if shared == epochs or "lstm" not in records or shared == 0:
        return full
    ran = [MODELS[n][1] for n in MODELS if n in records and records[n]["epochs"]]
    lr = ", ".join(sorted({f"{learning_rate(e):g}" for e in range(1, shared + 1)}))
    early = "" if shared > SMALL.training.decay_after else (" An early reading: the learning rate has not "
                                                      "started to decay yet.")
    return (full + f"\n\n### The same budget for every model: the first {shared} epoch(s)\n\n"
            f"Every run follows the same schedule, so the first {shared} epoch(s) of each (learning rate "
            f"{lr}) are the same budget for all {len(ran)} runs.{early}\n\n"
            + pattern(records, shared))



def tables(epochs: int, runs=RUNS, max_sentences=None) -> str:
    records = load_records(runs, max_sentences)
    figure = Path(runs).with_suffix(".png")      # bench/results/ptb.png, drawn by main()
    parts = [f"Penn Treebank (Mikolov's 10k-word version), {epochs} epochs"
             + (f", first {max_sentences} sentences of each split (smoke test)" if max_sentences else "")
             + ". Test perplexity in bold; wall time includes the valid and test evaluation after every "
               "epoch. The machine has 2 cores shared with other work, and DyNet uses one: speeds "
               "are what the run got, not what an idle core gives.",
             "## Results\n\n" + results_table(records, epochs),
             "## Does the papers' pattern hold?\n\n" + patterns(records, epochs),
             "## Valid / test perplexity after each epoch\n\n"
             + (f"![valid perplexity after each epoch]({figure.name})\n\n" if figure.exists() else "")
             + curves_table(records, epochs)]
    growth_path = Path(runs) / "state-growth.json"
    if growth_path.exists():
        parts.append("## The RANs under this budget: how large the memory cell grows along the stream\n\n"
                     + growth_table(json.loads(growth_path.read_text()), records))
    parts += [PUBLISHED_TEXT.strip(), SETUP_TEXT.strip()]
    speed_path = Path(runs) / "speed.json"
    if speed_path.exists():
        parts.append("## Speed: what makes training faster without changing the model\n\n"
                     + speed_table(json.loads(speed_path.read_text())))
    return "\n\n".join(parts)
