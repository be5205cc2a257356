"""Shared by the benchmark scripts: machine description, timing, markdown tables."""
from __future__ import annotations

import os
import platform
import re
import time
from collections import Counter
from pathlib import Path

from course.bench import RESULTS, table  # noqa: F401  (bench/results, and the markdown table the lectures print too)
from course.paths import ROOT  # noqa: F401  (the scripts' ROOT)


def machine() -> str:
    from course import runtime
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores | {runtime.describe()}"


def machines_of(records) -> str:
    """The machines that trained ``records`` (dicts with a "machine" as :func:`machine` wrote it,
    plus the run's seed), each with its number of runs: a table rebuilt from records on another
    machine names theirs, not its own."""
    found = Counter(re.sub(r"seed \d+, ", "", r["machine"]) for r in records if r.get("machine"))
    return "; ".join(f"{m} ({n} run{'s' if n > 1 else ''})" for m, n in found.most_common()) or "not recorded"


def report(name: str, title: str, body: str, command: str, results: Path = RESULTS, machines: str | None = None):
    """Print the result and keep a copy in bench/results/NAME.md (or in ``results``). ``machines``:
    where a table comes from saved runs, the machines that trained them (:func:`machines_of`)."""
    where = f"Machine: {machine()}" if machines is None else f"Machines (of the runs): {machines}"
    text = (f"# {title}\n\n{body}\n\n{where}\n\n"
            f"Date: {time.strftime('%Y-%m-%d')}. Reproduce: `{command}`\n")
    print(text)
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{name}.md").write_text(text)
