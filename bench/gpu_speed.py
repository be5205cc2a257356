"""Training speed of the course's LSTM language model: DyNet on the CPU, DyNet on the GPU,
and PyTorch's ``nn.LSTM`` on the same GPU, in one run (issue 22).

Two configurations of Zaremba et al. (2014), both with the 10k-word PTB softmax:

* ``small``: 2 layers of 200, embeddings of 200, batch 20, 20 steps (SMALL in bench/penn/models.py);
* ``medium``: 2 layers of 650, embeddings of 650, batch 20, 35 steps.

Every row trains the same way bench/ptb.py does: truncated backpropagation over the
training stream cut into 20 columns, the state carried from segment to segment, the loss
summed over the steps and averaged over the columns, SGD at learning rate 1 with the
gradient norm clipped to 5, the loss read back after every segment. Tokens per second
count the predicted tokens of the timed segments (wall clock; one untimed segment first,
to warm up). Each row runs in its own worker process (DyNet chooses CPU or GPU at import),
``--rounds`` interleaved rounds, and the table gives the median.

Rows: DyNet on one CPU core and on the GPU with the course's LSTM (the hand-written cell
of bench/ptb.py, one matrix per gate), DyNet's own VanillaLSTMBuilder on the GPU (one
stacked gate matrix: fewer, larger kernels), PyTorch's ``nn.LSTM`` on the GPU (cuDNN,
float32 with TF32 off, as DyNet computes) and on one CPU thread. A row that cannot run here (no GPU, no CUDA DyNet, no PyTorch)
says why in the table instead of a number.

The text is Penn Treebank's training split when a copy is found (``--ptb DIR``,
``data/external/ptb``, or ``shared/data/ptb`` beside the repository), else a generated
stream over a vocabulary of PTB's size (10,001 ids); the table says which. The speed
depends on the vocabulary size, not on which words the stream holds.

    .venv/bin/python bench/gpu_speed.py                       # here: the CPU rows
    python bench/gpu_speed.py --rounds 3                      # on a GPU machine (gpu/on_device.sh)
    python bench/gpu_speed.py --configs small --segments-cpu 1 --segments-gpu 2 --rounds 1 --generated --out DIR
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import RESULTS, ROOT, machine, report, table
from penn.models import SMALL

# penn.models.Budget: the model and its training, as bench/ptb.py trains them (one epoch here)
CONFIGS = {"small": SMALL, "medium": SMALL.but(embed=650, hidden=650, bptt=35)}
PTB_VOCAB = 10_001          # what course.data.Vocab.build gives on PTB's training split

# row -> (label, library, device). The DyNet rows run bench/ptb.py's training code.
ROWS = {
    "dynet-cpu": ("DyNet, CPU (one core), the course's LSTM", "dynet", "cpu"),
    "dynet-gpu": ("DyNet, GPU, the course's LSTM", "dynet", "gpu"),
    "dynet-gpu-builder": ("DyNet, GPU, DyNet's VanillaLSTMBuilder", "dynet", "gpu"),
    "torch-gpu": ("PyTorch nn.LSTM (cuDNN), GPU", "torch", "gpu"),
    "torch-cpu": ("PyTorch nn.LSTM, CPU (one thread)", "torch", "cpu"),
}
SKIPPED = 3                 # a worker's exit code for "this row cannot run here"
DYNET_MEM_MB = 2048


# --------------------------------------------------------------------------- the text
def find_ptb(given: str | None) -> Path | None:
    """The folder holding PTB's train.txt: --ptb, data/external/ptb, or ../shared/data/ptb."""
    if given:
        folder = Path(given)
        if not (folder / "train.txt").exists():
            raise SystemExit(f"--ptb {given}: no train.txt there (give the folder holding "
                             "PTB's train.txt, valid.txt and test.txt)")
        return folder
    for folder in (ROOT / "data" / "external" / "ptb", ROOT.parent / "shared" / "data" / "ptb"):
        if (folder / "train.txt").exists():
            return folder
    return None


def training_columns(ptb: Path | None, tokens_needed: int, batch: int = 20):
    """(columns of shape (batch, n), vocabulary size, what the text is)."""
    import numpy as np
    from penn.corpus import load_corpus

    from course.sources import columns, stream_ids
    if ptb is not None:
        vocab, splits = load_corpus(str(ptb))
        ids = stream_ids(splits["train"], vocab)
        what = f"Penn Treebank's training split ({len(ids):,} tokens, vocabulary {len(vocab):,}) from {ptb.name}/"
        size = len(vocab)
    else:
        # Zipf-like word frequencies over PTB's vocabulary size; seeded, so every row sees the same.
        rng = np.random.default_rng(1)
        weights = 1.0 / np.arange(1, PTB_VOCAB + 1)
        ids = rng.choice(PTB_VOCAB, size=tokens_needed, p=weights / weights.sum()).tolist()
        what = (f"a generated stream of {len(ids):,} tokens over {PTB_VOCAB:,} ids (no PTB copy "
                "found: pass --ptb DIR for the real text; the speed depends on the vocabulary size only)")
        size = PTB_VOCAB
    ids = ids[:max(tokens_needed, 2 * batch)]
    return columns(ids, batch), size, what


# --------------------------------------------------------------------------- workers
def skip(reason: str):
    print(json.dumps({"skipped": reason}))
    sys.exit(SKIPPED)


def dynet_worker(row: str, config, segments: int, data, vocab_size: int) -> dict:
    from course import runtime
    gpu = ROWS[row][2] == "gpu"
    try:
        runtime.init(seed=config.training.seed, mem=DYNET_MEM_MB, gpu=gpu)
    except runtime.GPUUnavailable as err:
        skip(str(err))
    from penn.models import build_model

    from course.data import Vocab
    from course import training
    from course.sources import Stream
    vocab = Vocab(["<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(vocab_size - 3)])
    cell = "lstm" if row.endswith("builder") else None      # None: the course's LSTM (hand-lstm)
    model = build_model("lstm", vocab, config, cell=cell)
    stream = Stream.of_rows(data, config.training.bptt)
    for n in (1, segments):                                  # a warm-up segment, then the timed ones
        done = training.train(model, stream, None, config.training.but(epochs=1, max_batches=n),
                              progress=False, log=None)[0]
    count, seconds = done["tokens"], done["seconds"]
    device = next((line.strip() for line in runtime.banner.splitlines() if "Device name" in line), "")
    return {"tokens": count, "seconds": seconds, "about": runtime.describe() + (f" | {device}" if device else "")}


def torch_worker(row: str, config, segments: int, data, vocab_size: int) -> dict:
    try:
        import torch
    except ImportError as err:
        skip(f"PyTorch is not installed in this environment ({err})")
    gpu = ROWS[row][2] == "gpu"
    if gpu and not torch.cuda.is_available():
        skip(f"PyTorch {torch.__version__} sees no GPU (torch.cuda.is_available() is False)")
    device = torch.device("cuda" if gpu else "cpu")
    # float32 arithmetic throughout, as DyNet's: no TF32 in cuDNN's LSTM or in the matrix products.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    if not gpu:
        torch.set_num_threads(1)       # DyNet's CPU row uses one core too
    torch.manual_seed(config.training.seed)
    m = config.model

    class LanguageModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(vocab_size, m.embed)
            self.lstm = torch.nn.LSTM(m.embed, m.hidden, m.layers, batch_first=True)
            self.out = torch.nn.Linear(m.hidden, vocab_size)

        def forward(self, words, state):
            hidden, state = self.lstm(self.embed(words), state)
            return self.out(hidden), state

    model = LanguageModel().to(device)
    for p in model.parameters():
        torch.nn.init.uniform_(p, -m.init_scale, m.init_scale)
    optimizer = torch.optim.SGD(model.parameters(), lr=config.training.lr)
    columns = torch.as_tensor(data, dtype=torch.long, device=device)
    steps, batch = config.training.bptt, columns.shape[0]

    def train(first: int, n: int) -> int:
        state, count = None, 0
        for k in range(first, first + n):
            inputs = columns[:, k * steps:(k + 1) * steps]
            targets = columns[:, k * steps + 1:(k + 1) * steps + 1]
            scores, state = model(inputs, state)
            loss = torch.nn.functional.cross_entropy(scores.reshape(-1, vocab_size), targets.reshape(-1),
                                                     reduction="sum")
            optimizer.zero_grad()
            (loss / batch).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.training.clip)
            optimizer.step()
            loss.item()                  # read the loss back every segment, as the DyNet rows do
            state = tuple(s.detach() for s in state)
            count += targets.numel()
        return count

    train(0, 1)                          # warm-up: cuDNN plans, the allocator
    if gpu:
        torch.cuda.synchronize()
    start = time.perf_counter()
    count = train(0, segments)
    if gpu:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    about = f"PyTorch {torch.__version__}"
    if gpu:
        about += f" (CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}) on {torch.cuda.get_device_name(0)}"
    return {"tokens": count, "seconds": seconds, "about": about}


def worker(args) -> int:
    import numpy as np
    config = CONFIGS[args.config]
    data = np.load(args.data)
    library = ROWS[args.worker][1]
    result = (dynet_worker if library == "dynet" else torch_worker)(args.worker, config, args.segments,
                                                                   data, args.vocab_size)
    print(json.dumps(result))
    return 0


# --------------------------------------------------------------------------- the table
def run_row(row: str, config: str, segments: int, data_path: Path, vocab_size: int, timeout: int) -> dict:
    """One worker: {"tokens", "seconds", "about"}, or {"skipped": why}, or {"failed": why}."""
    command = [sys.executable, __file__, "--worker", row, "--config", config, "--segments", str(segments),
               "--data", str(data_path), "--vocab-size", str(vocab_size)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"failed": f"did not finish within {timeout} s (--row-timeout)"}
    last = (done.stdout.strip().splitlines() or [""])[-1]
    if done.returncode in (0, SKIPPED):
        try:
            return json.loads(last)
        except json.JSONDecodeError:
            pass
    error = (done.stderr.strip().splitlines() or ["no message"])[-1]
    return {"failed": f"exit code {done.returncode}: {error[:300]}"}


def measure_round(results: dict, number: int, rounds: int, segments: dict, data_path: Path,
                  vocab_size: int, timeout: int, log=print):
    """One round: every row of every configuration once, appended to ``results``
    ({config: {row: [value, ...]}}); a row that could not run is not tried again."""
    for config, by_row in results.items():
        for row, done in by_row.items():
            if done and ("skipped" in done[0] or "failed" in done[0]):
                continue
            value = run_row(row, config, segments[ROWS[row][2]], data_path, vocab_size, timeout)
            done.append(value)
            shown = (f"{value['tokens'] / value['seconds']:,.0f} tokens/s" if "tokens" in value
                     else value.get("skipped") or value.get("failed"))
            log(f"round {number}/{rounds}  {config:<6}  {row:<18}  {shown}", flush=True)


def summarise(results: dict) -> dict:
    """Per configuration and row: median tokens/s and the rounds' range, or why it did not run."""
    summary = {}
    for config, rows in results.items():
        summary[config] = {}
        for row, values in rows.items():
            speeds = [v["tokens"] / v["seconds"] for v in values if "tokens" in v]
            if speeds:
                summary[config][row] = {"tokens_per_s": statistics.median(speeds), "low": min(speeds),
                                        "high": max(speeds), "rounds": len(speeds),
                                        "tokens_per_round": values[0]["tokens"], "about": values[0]["about"]}
            else:
                problem = values[0] if values else {"failed": "not run"}
                summary[config][row] = {"not_run": problem.get("skipped") or problem.get("failed"),
                                        "kind": "could not run here" if "skipped" in problem else "failed"}
    return summary


def speed_table(summary: dict) -> str:
    rows = []
    for config, by_row in summary.items():
        m, t = CONFIGS[config].model, CONFIGS[config].training
        shape = f"{config}: {m.layers} x {m.hidden}, batch {t.batch_size}, {t.bptt} steps"
        cpu = by_row.get("dynet-cpu", {}).get("tokens_per_s")
        for row, value in by_row.items():
            if "tokens_per_s" in value:
                ratio = f"{value['tokens_per_s'] / cpu:.1f}x" if cpu else ""
                rows.append([shape, ROWS[row][0], f"{value['tokens_per_s']:,.0f}",
                             f"{value['low']:,.0f} to {value['high']:,.0f}", ratio,
                             f"{value['tokens_per_round']:,}"])
            else:
                rows.append([shape, ROWS[row][0], f"not run ({value['kind']}): {value['not_run']}", "", "", ""])
    return table(["configuration", "row", "training tokens / s (median)", "rounds' range",
                  "vs DyNet CPU", "tokens timed per round"], rows)


def goals(summary: dict) -> str:
    """The issue's goals on the medium configuration: GPU >= 20x CPU, within 2x of PyTorch."""
    medium = summary.get("medium")
    if medium is None:
        return "The goals are stated for the medium configuration, which this run left out."
    speed = {row: v.get("tokens_per_s") for row, v in medium.items()}
    lines = []
    cpu, gpu, torch_gpu = speed.get("dynet-cpu"), speed.get("dynet-gpu"), speed.get("torch-gpu")
    if cpu and gpu:
        lines.append(f"- DyNet GPU / DyNet CPU on medium: {gpu / cpu:.1f}x (goal: at least 20x): "
                     + ("met" if gpu / cpu >= 20 else "not met"))
    else:
        lines.append("- DyNet GPU / DyNet CPU on medium: not measured (a row did not run, see the table)")
    if gpu and torch_gpu:
        lines.append(f"- PyTorch GPU / DyNet GPU on medium: {torch_gpu / gpu:.1f}x (goal: at most 2x): "
                     + ("met" if torch_gpu / gpu <= 2 else "not met"))
    else:
        lines.append("- PyTorch GPU / DyNet GPU on medium: not measured (a row did not run, see the table)")
    return "\n".join(lines)


def versions(summary: dict) -> str:
    seen = []
    for by_row in summary.values():
        for row, value in by_row.items():
            line = f"- {ROWS[row][0]}: {value['about']}" if "about" in value else None
            if line and line not in seen:
                seen.append(line)
    gpus = ""
    try:
        gpus = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    seen.append(f"- nvidia-smi -L: {gpus or 'no NVIDIA GPU listed (or no nvidia-smi)'}")
    return "\n".join(seen)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", default="small,medium", help="comma-separated: small, medium")
    parser.add_argument("--rows", default=",".join(ROWS), help="comma-separated: " + ", ".join(ROWS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--segments-cpu", type=int, default=4, help="timed segments of a CPU row")
    parser.add_argument("--segments-gpu", type=int, default=40, help="timed segments of a GPU row")
    parser.add_argument("--row-timeout", type=int, default=300, help="seconds one worker may take")
    parser.add_argument("--ptb", default=None, help="folder with PTB's train.txt (default: found, else generated)")
    parser.add_argument("--generated", action="store_true", help="use the generated stream even where PTB is found")
    parser.add_argument("--out", default=str(RESULTS), help="where gpu_speed.md and .json go")
    parser.add_argument("--worker", choices=list(ROWS), help=argparse.SUPPRESS)
    parser.add_argument("--config", choices=list(CONFIGS), help=argparse.SUPPRESS)
    parser.add_argument("--segments", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--vocab-size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)

    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [c for c in configs if c not in CONFIGS] + [r for r in rows if r not in ROWS]
    if unknown or not configs or not rows:
        parser.error(f"unknown or empty --configs/--rows: {unknown or 'nothing chosen'}; "
                     f"configs: {', '.join(CONFIGS)}; rows: {', '.join(ROWS)}")
    if min(args.rounds, args.segments_cpu, args.segments_gpu) < 1:
        parser.error("--rounds, --segments-cpu and --segments-gpu must be at least 1")
    segments = {"cpu": args.segments_cpu, "gpu": args.segments_gpu}
    longest = max(CONFIGS[c].training.bptt for c in configs)
    tokens_needed = 20 * longest * (max(segments.values()) + 2) + 21
    columns, vocab_size, text = training_columns(None if args.generated else find_ptb(args.ptb), tokens_needed)
    import numpy as np
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = {c: {r: [] for r in rows} for c in configs}
    with tempfile.TemporaryDirectory() as scratch:
        data_path = Path(scratch) / "columns.npy"
        np.save(data_path, columns)
        for number in range(1, args.rounds + 1):
            measure_round(results, number, args.rounds, segments, data_path, vocab_size, args.row_timeout)
            write_results(results, number, args, text, out, quiet=number < args.rounds)
    return 0


def write_results(results: dict, rounds_done: int, args, text: str, out: Path, quiet: bool):
    """The table (gpu_speed.md) and every number (gpu_speed.json), rewritten after each round
    so that a run stopped early keeps the rounds it finished."""
    summary = summarise(results)
    body = (f"Training tokens per second (forward, backward, SGD update, loss read back each segment) "
            f"on {text}; median of {rounds_done} interleaved round(s) of {args.rounds}, each row in a "
            f"fresh process, one untimed warm-up segment first; {args.segments_cpu} timed segments per "
            f"CPU row, {args.segments_gpu} per GPU row. DyNet rows: bench/ptb.py's training code; "
            f"DyNet's CPU row uses one core, as DyNet does; PyTorch's CPU row is held to one thread "
            f"to match, and PyTorch computes in float32 as DyNet does (TF32 off).\n\n"
            + speed_table(summary) + "\n\n## Goals (issue 22)\n\n" + goals(summary)
            + "\n\n## Versions\n\n" + versions(summary))
    command = (f"python bench/gpu_speed.py --configs {args.configs} --rows {args.rows} --rounds {args.rounds} "
               f"--segments-cpu {args.segments_cpu} --segments-gpu {args.segments_gpu}")
    title = "Training speed: DyNet CPU, DyNet GPU, PyTorch nn.LSTM"
    if quiet:
        (out / "gpu_speed.md").write_text(f"# {title}\n\n{body}\n")
    else:
        report("gpu_speed", title, body, command, results=out)
    (out / "gpu_speed.json").write_text(json.dumps(
        {"text": text, "rounds": rounds_done, "segments": {"cpu": args.segments_cpu, "gpu": args.segments_gpu},
         "machine": machine(), "python": platform.python_version(), "summary": summary, "all": results},
        indent=1) + "\n")

if __name__ == "__main__":
    sys.exit(main())
