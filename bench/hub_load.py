"""A class at once on the course's hub: students log in, fetch, submit and fetch feedback.

    sudo .venv/bin/python bench/hub_load.py [--students 30]

Starts a throw-away hub on loopback (hub/local.py: real Unix accounts, removed
afterwards). The instructor releases 05_gru; every student, each in a thread of
their own and all at once, logs in through the login form, starts a server through
the hub's REST API, fetches 05_gru with nbgrader's assignment list, saves an answer
(half right, half with the update gate exchanged, each marked with its author's
name) and submits. The instructor collects, autogrades every submission (whatever
the course's nbgrader configuration runs) and releases feedback; every student then
fetches their feedback at once. Counted: submissions that arrived (collected, with
their author's name), crossed (a collected notebook or a feedback page carrying
another student's name), and feedback pages that arrived; timed: logins to submission, collect,
grading, feedback; measured: the hub's and the proxy's peak resident memory
(VmHWM) and the users' servers' largest sum of resident memory, sampled each second.
"""
from __future__ import annotations

import argparse
import copy
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import ROOT, report, table  # noqa: F401  (common puts the repo on sys.path)

import nbformat  # noqa: E402

from autograder.cellmarks import marks  # noqa: E402
from hub.layout import COURSE_ID  # noqa: E402
from hub.local import LocalHub  # noqa: E402

RIGHT = "dy.cmult(1 - z, h_prev) + dy.cmult(z, candidate)"
SWAPPED = "dy.cmult(z, h_prev) + dy.cmult(1 - z, candidate)"


def answer(solution_cell: str, name: str, right: bool) -> str:
    body = solution_cell.split("### BEGIN SOLUTION\n", 1)[1].split("    ### END SOLUTION", 1)[0]
    if not right:
        body = body.replace(RIGHT, SWAPPED)
    head = solution_cell.split("    ### BEGIN SOLUTION", 1)[0]
    return f"# author: {name}\n{head}{body}"


def rss_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


class MemorySampler(threading.Thread):
    """Largest sum of resident memory of the users' servers (jupyterhub-singleuser and kernels)."""
    def __init__(self, users):
        super().__init__(daemon=True)
        self.users, self.peak_kb, self.stop = users, 0, threading.Event()

    def run(self):
        while not self.stop.wait(1.0):
            total = 0
            for user in self.users:
                pids = subprocess.run(["pgrep", "-u", user], capture_output=True, text=True).stdout.split()
                for pid in pids:
                    try:
                        total += rss_kb(int(pid), "VmRSS")
                    except (OSError, ValueError):
                        pass
            self.peak_kb = max(self.peak_kb, total)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=30)
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("error: bench/hub_load.py makes Unix accounts for its students: run it as root "
              "(sudo .venv/bin/python bench/hub_load.py)", file=sys.stderr)
        return 2
    solution = next(c.source for c in nbformat.read(ROOT / "solutions" / "05_gru.ipynb", as_version=4).cells
                    if marks(c).get("grade_id") == "gru_step")

    load_before = os.getloadavg()[1]
    with LocalHub(students=[f"s{k:02d}" for k in range(args.students)]) as hub:
        teacher = hub.login(hub.instructor)
        teacher.start_server()
        teacher.formgrader("assignment/05_gru/assign", "generate 05_gru")
        teacher.formgrader("assignment/05_gru/release", "release 05_gru")
        right = {name: k % 2 == 0 for k, name in enumerate(hub.students)}
        sampler = MemorySampler(hub.students)
        sampler.start()

        failures = {}

        def work(name):
            try:
                return submit(name)
            except Exception as err:           # counted, not hidden: the table shows it
                failures[name] = f"{type(err).__name__}: {err}"[:200]
                return None

        def submit(name):
            start = time.perf_counter()
            me = hub.login(name)
            me.start_server(timeout_s=600)
            me.assignment_action("fetch", COURSE_ID, "05_gru")
            nb = me.read_file("05_gru/05_gru.ipynb")["content"]
            nb = copy.deepcopy(nb)
            for cell in nb["cells"]:
                if marks(cell).get("grade_id") == "gru_step":
                    cell["source"] = answer(solution, name, right[name])
            me.write_notebook("05_gru/05_gru.ipynb", nb)
            me.assignment_action("submit", COURSE_ID, "05_gru")
            return time.perf_counter() - start

        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=len(hub.students)) as pool:
            submit_times = [t for t in pool.map(work, hub.students) if t is not None]
        all_submitted = time.perf_counter() - start

        start = time.perf_counter()
        teacher.formgrader("assignment/05_gru/collect", "collect")
        collect_s = time.perf_counter() - start
        submitted = hub.layout.course_dir(hub.instructor) / "submitted"
        arrived = crossed = 0
        for name in hub.students:
            path = submitted / name / "05_gru" / "05_gru.ipynb"
            names = set(re.findall(r"h[0-9a-f]{6}s\d+", path.read_text())) if path.is_file() else set()
            arrived += name in names
            crossed += bool(names - {name})

        start = time.perf_counter()
        for name in hub.students:
            if name not in failures:
                teacher.formgrader(f"submission/05_gru/{name}/autograde", f"autograde {name}")
        grade_s = time.perf_counter() - start
        start = time.perf_counter()
        teacher.formgrader("assignment/05_gru/generate_feedback", "generate feedback")
        teacher.formgrader("assignment/05_gru/release_feedback", "release feedback")
        feedback_s = time.perf_counter() - start
        scores = {name: teacher.server("GET", f"formgrader/api/submission/05_gru/{name}", "score").json()
                  for name in hub.students if name not in failures}
        as_expected = sum((s["score"] == s["max_score"]) == right[n] for n, s in scores.items())

        def read_feedback(name):
            try:
                return feedback_of(name)
            except Exception as err:
                failures.setdefault(name, f"feedback: {type(err).__name__}: {err}"[:200])
                return ""

        def feedback_of(name):
            me = hub.login(name)
            me.assignment_action("fetch_feedback", COURSE_ID, "05_gru")
            entry = next(a for a in me.assignments(COURSE_ID)
                         if a["assignment_id"] == "05_gru" and a["status"] == "submitted")
            folder = entry["submissions"][-1]["local_feedback_path"]
            return me.read_file(f"{folder}/05_gru.html")["content"]

        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=len(hub.students)) as pool:
            pages = dict(zip(hub.students, pool.map(read_feedback, hub.students)))
        fetch_feedback_s = time.perf_counter() - start
        feedback_arrived = sum("05_gru" in page for page in pages.values())
        feedback_crossed = sum(bool(set(re.findall(r"h[0-9a-f]{6}s\d+", page)) - {name})
                               for name, page in pages.items())
        sampler.stop.set()
        hub_peak = rss_kb(hub.process.pid, "VmHWM")
        proxy = subprocess.run(["pgrep", "-f", f"configurable-http-proxy.*{hub.url.rsplit(':', 1)[1]}"],
                               capture_output=True, text=True).stdout.split()
        proxy_peak = max((rss_kb(int(pid), "VmHWM") for pid in proxy), default=0)

    n = args.students
    rows = [
        ["students", n],
        ["students whose round failed", f"{len(failures)}" + "".join(f"; {k}: {v}" for k, v in sorted(failures.items())[:3])],
        ["submissions arrived (collected, with their author's mark)", f"{arrived} / {n}"],
        ["submissions crossed (another student's mark in a collected notebook)", crossed],
        ["scores as expected (right answers full marks, swapped gate less)", f"{as_expected} / {n}"],
        ["feedback pages arrived (fetched by their student)", f"{feedback_arrived} / {n}"],
        ["feedback crossed (another student's name in a feedback page)", feedback_crossed],
        ["log in to submitted, per student: median / slowest (s)",
         f"{statistics.median(submit_times):.1f} / {max(submit_times):.1f}" if submit_times else "-"],
        ["all students submitted (s)", f"{all_submitted:.1f}"],
        ["collect all (s)", f"{collect_s:.1f}"],
        ["autograde all, one after another, as formgrader does (s)", f"{grade_s:.1f} ({grade_s / n:.1f} per submission)"],
        ["generate + release feedback (s)", f"{feedback_s:.1f}"],
        ["all students fetch and read feedback (s)", f"{fetch_feedback_s:.1f}"],
        ["hub peak resident memory (MB)", f"{hub_peak / 1024:.0f}"],
        ["proxy peak resident memory (MB)", f"{proxy_peak / 1024:.0f}"],
        ["users' servers, largest sum of resident memory (MB)", f"{sampler.peak_kb / 1024:.0f}"],
    ]
    body = (f"{n} students at once against one hub on loopback (JupyterHub, configurable-http-proxy, "
            f"one server per student as their own Unix user), through the hub's REST API and nbgrader's "
            f"exchange. Grading: nbgrader autograde as the course's configuration runs it "
            f"(autograder/nbgrader_config.py), started from formgrader's API. The machine's load average "
            f"(5 minutes) was {load_before:.1f} before the run and {os.getloadavg()[1]:.1f} after it "
            f"(every process on the machine counts, not only this run).\n\n" + table(["what", "measured"], rows))
    report("hub_load", "A class on the hub at once", body, f"sudo .venv/bin/python bench/hub_load.py --students {n}")
    return 0 if not failures and arrived == n and not crossed and not feedback_crossed and feedback_arrived == n else 1


if __name__ == "__main__":
    raise SystemExit(main())
