"""Grading on a Dask cluster: a scheduler and two `dask worker` processes on loopback, over TLS with
the course's certificates (`make cluster-certs`'s command, into a temporary folder), the workers
run as a Unix user that cannot read the course directory (they get each submission's bytes and
return its result; no file system is shared), grade the sample class, attacks included, with the
same digests, scores and statuses as the local pool; one worker is killed mid-class and every
submission is still graded, once, in nbgrader's gradebook. The issue's attack, a client with only
`distributed` installed and no course certificate wrapping the workers' grader with `client.run`,
is refused (tests/test_cluster_tls.py tries more).

Needs root (it makes the workers' account) and a Python every user may run (Debian's python3),
in which the workers' environment is built."""
from __future__ import annotations

import importlib.metadata
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path

import pytest

import autograder.cluster
from autograder import grade
from hub.prepare import course_python
from tests.conftest import ROOT
from tests.test_autograder import LIMITS, graded_class

pytestmark = pytest.mark.xdist_group("dask")
ACCOUNT = "coursedask"
# the whole committed sample class: honest students and every kind of attack
STUDENTS = sorted(p.name for p in (ROOT / "autograder" / "samples" / "submissions").iterdir() if p.is_dir())


def worker_requirements() -> list:
    """What the trusted grader imports, pinned as the repository pins it (course and autograder
    themselves come from the checkout, on PYTHONPATH)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = ("dyNET38", "numpy", "tqdm", "matplotlib", "dask==", "distributed")
    pins = [d for d in project["dependencies"] + project["optional-dependencies"]["grader"] if d.startswith(wanted)]
    return pins + [f"nbformat=={importlib.metadata.version('nbformat')}"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.fail("test_dask_grading needs root: it runs the workers as an account of their own")
    base = Path(tempfile.mkdtemp(prefix="course-dask-"))      # not under pytest's 0700 folder: the workers read it
    os.chmod(base, 0o755)
    env_dir = base / "worker-env"
    subprocess.run([course_python(), "-m", "venv", "--without-pip", str(env_dir)], check=True)
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(env_dir / "bin" / "python"), "install",
                              "--quiet", *worker_requirements()], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-3000:]
    try:
        pwd.getpwnam(ACCOUNT)
        made = False
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", ACCOUNT], check=True)
        made = True
    certs = base / "certs"
    made_certs = subprocess.run([sys.executable, "-m", "autograder.cluster", "certs", "--out", str(certs)],
                                cwd=ROOT, capture_output=True, text=True)
    assert made_certs.returncode == 0, made_certs.stderr
    port = free_port()
    python = str(env_dir / "bin" / "python")

    def tls(folder: Path, role: str) -> list:
        return ["--tls-ca-file", str(folder / "ca.pem"), "--tls-cert", str(folder / f"{role}.pem"),
                "--tls-key", str(folder / f"{role}-key.pem")]
    processes = []                  # killed at the end, also when the cluster fails to start
    try:
        processes.append(subprocess.Popen(
            [python, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(port),
             "--protocol", "tls", *tls(certs, "scheduler"), "--no-dashboard"], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True))
        account = pwd.getpwnam(ACCOUNT)
        for name in ("w1", "w2"):
            scratch = base / name
            scratch.mkdir()
            for file in ("ca.pem", "worker.pem", "worker-key.pem"):       # what a grading machine is given
                shutil.copy(certs / file, scratch / file)
                os.chown(scratch / file, account.pw_uid, -1)
            os.chown(scratch, account.pw_uid, -1)
            env = {"PATH": f"{env_dir / 'bin'}:/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(scratch),
                   "MPLBACKEND": "Agg"}
            processes.append(subprocess.Popen(
                [python, "-m", "distributed.cli.dask_worker", f"tls://127.0.0.1:{port}", *tls(scratch, "worker"),
                 "--nthreads", "1", "--nworkers", "1", "--no-dashboard", "--name", name,
                 "--local-directory", str(scratch)], env=env, cwd=scratch, stdout=subprocess.DEVNULL,
                stderr=open(scratch / "log", "w"), start_new_session=True,
                user=account.pw_uid, group=account.pw_gid, extra_groups=[]))
        with autograder.cluster.client(f"tls://127.0.0.1:{port}", certs, timeout="60s") as client:
            client.wait_for_workers(2, timeout=120)
        yield {"address": f"tls://127.0.0.1:{port}", "workers": processes[1:], "base": base, "certs": certs,
               "python": python}
    finally:
        for process in processes:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
    shutil.rmtree(base, ignore_errors=True)
    if made:
        subprocess.run(["userdel", ACCOUNT], check=False)


def gradebook_counts(course) -> dict:
    """(student, chapter) -> how many submissions nbgrader's gradebook holds."""
    from collections import Counter
    from nbgrader.api import Gradebook, SubmittedAssignment
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "rnnlm-course") as gb:
        return Counter((s.student_id, s.assignment.name) for s in gb.db.query(SubmittedAssignment))


def test_the_workers_cannot_read_the_course(cluster, tmp_path):
    course = tmp_path / "course"
    course.mkdir(mode=0o700)
    (course / "gradebook.db").write_text("")
    account = pwd.getpwnam(ACCOUNT)
    tried = subprocess.run(["cat", str(course / "gradebook.db")], capture_output=True, text=True,
                           user=account.pw_uid, group=account.pw_gid, extra_groups=[])
    assert tried.returncode != 0 and "Permission denied" in tried.stderr


ROGUE = """
import sys
from distributed import Client
address = sys.argv[1]                       # one address per process (tests/test_cluster_tls.py's ROGUE says why)
try:
    client = Client(address, timeout="10s")
except Exception as err:
    print("refused", address, type(err).__name__)
else:
    client.run(lambda: __import__("autograder.grader").grader.__setattr__("grade", None))
    print("connected", address, client.run_on_scheduler(lambda: open("/etc/hostname").read()))
"""


def test_a_client_without_the_courses_certificate_cannot_touch_the_workers(cluster):
    """The issue's attack, from the network: the workers' Python (distributed, no course files), as
    another user, on the scheduler's port over TLS and over plain TCP."""
    account = pwd.getpwnam(ACCOUNT)
    address = cluster["address"]
    for target in (address, address.replace("tls://", "tcp://")):
        tried = subprocess.run([cluster["python"], "-c", ROGUE, target], capture_output=True, text=True, cwd="/",
                               timeout=120, user=account.pw_uid, group=account.pw_gid, extra_groups=[])
        assert tried.stdout.startswith("refused") and "connected" not in tried.stdout, tried.stdout + tried.stderr[-2000:]


def test_a_cluster_grades_as_the_local_pool_does_and_survives_a_killed_worker(cluster, tmp_path, tmp_path_factory):
    """The local pool's side is the sample class as tests/test_autograder.py grades it (once per
    run, with its limits; its planted students left out here), so the cluster grades with those limits."""
    submissions = ROOT / "autograder" / "samples" / "submissions"
    course = tmp_path / "on-dask"

    def kill_one_worker():                 # once the first result is back, a worker dies mid-class
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not list((course / "trusted").rglob("*.json")):
            time.sleep(0.5)
        os.killpg(cluster["workers"][0].pid, signal.SIGKILL)
    killer = threading.Thread(target=kill_one_worker, daemon=True)
    killer.start()
    remote = {(r["student"], r["notebook"]): r for r in grade.autograde(
        submissions, course=course, students=STUDENTS, limits=LIMITS, scheduler=cluster["address"],
        certs=cluster["certs"])}
    killer.join()
    assert cluster["workers"][0].poll() is not None, "the worker was not killed"
    pool = graded_class(tmp_path_factory)          # graded meanwhile by the other worker, or now
    local = {(r["student"], r["notebook"]): r for r in pool["listed"] if r["student"] in STUDENTS}
    assert set(remote) == set(local) and {s for s, _ in local} == set(STUDENTS)
    for key, record in local.items():
        assert (remote[key]["score"], remote[key]["status"], remote[key].get("digest")) == \
            (record["score"], record["status"], record.get("digest")), key
    counts = gradebook_counts(course)
    assert counts and all(n == 1 for n in counts.values()), counts
    assert set(counts) == {k for k in gradebook_counts(pool["course"]) if k[0] in STUDENTS}  # those intake did not refuse
