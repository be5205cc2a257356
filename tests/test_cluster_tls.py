"""The Dask cluster under attack (autograder/cluster.py): Dask's TLS with the course's certificates.

A scheduler and a worker on loopback, started with the certificates that `make cluster-certs` makes
(its command, into a temporary folder). The instructor grades a small class through the real path
(``grade.autograde(..., scheduler="tls://...")``, one ``nbgrader autograde`` run per submission),
through a relay that records every byte between the grader and the scheduler. A rogue client
without the course's certificate (its own, another course's, none) can neither connect, run a
function on the worker or the scheduler, nor read a task; the worker never asks for the
instructor's fresh-point key; the command refuses a scheduler that is not tls://.
(tests/test_dask_grading.py runs the whole sample class on such a cluster, workers as another user.)"""
from __future__ import annotations

import asyncio
import socket
import ssl
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from autograder import cluster, grade, grader
from tests.conftest import ROOT

pytestmark = pytest.mark.xdist_group("dask")
SAMPLES = ROOT / "autograder" / "samples" / "submissions"
CLASS = ["correct", "wrong_gate_order"]         # an honest student and a wrong answer
ANSWER = b"def gru_step(p, x, state):"          # a line of the honest student's answer cell, as JSON carries it


def make_certs(folder: Path) -> Path:
    """`make cluster-certs CERTS=folder`: its command."""
    done = subprocess.run([sys.executable, "-m", "autograder.cluster", "certs", "--out", str(folder)],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return folder


class Relay:
    """A TCP relay on loopback that forwards to ``port`` and keeps every byte it forwards: what
    anyone on the network between the instructor and the scheduler sees."""

    def __init__(self, port: int):
        self.target, self.seen, self.lock = port, bytearray(), threading.Lock()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            conn, _ = self.server.accept()
            upstream = socket.create_connection(("127.0.0.1", self.target))
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, a, b):
        try:
            while data := a.recv(1 << 16):
                with self.lock:
                    self.seen += data
                b.sendall(data)
            b.shutdown(socket.SHUT_WR)
        except OSError:
            pass


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    from distributed import LocalCluster
    certs = make_certs(tmp_path_factory.mktemp("cluster") / "certs")
    security = cluster.security(certs, roles=("client", "scheduler", "worker"))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", protocol="tls://",
                      security=security, dashboard_address=None) as local:
        with cluster.client(local.scheduler_address, certs) as client:
            workers = list(client.scheduler_info()["workers"])
        yield {"address": local.scheduler_address, "certs": certs, "workers": workers}


def course_context(certs: Path) -> ssl.SSLContext:
    return cluster.security(certs).get_connection_args("client")["ssl_context"]


def rogue_context() -> ssl.SSLContext:
    """A client with a certificate of its own, which trusts any server (so that what refuses it is
    the cluster, not its own check)."""
    from distributed.security import Security
    context = Security.temporary().get_connection_args("client")["ssl_context"]
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    return context


def call(address: str, context: ssl.SSLContext, op: str, **kwargs):
    """One request of Dask's protocol (``run_function`` on a scheduler: run_on_scheduler; ``run`` on
    a worker: client.run) over a connection made with ``context``."""
    from distributed.core import rpc

    async def go():
        remote = rpc(address, connection_args={"ssl_context": context, "require_encryption": context is not None},
                     timeout=10)
        try:
            return await getattr(remote, op)(**kwargs)
        finally:
            await remote.close_rpc()
    return asyncio.run(go())


def touch(path: str):
    Path(path).touch()


def test_the_certificates_are_the_courses_own(tmp_path):
    certs = make_certs(tmp_path / "certs")
    assert stat.S_IMODE(certs.stat().st_mode) == 0o700
    for role in ("ca", *cluster.ROLES):
        assert stat.S_IMODE((certs / f"{role}-key.pem").stat().st_mode) == 0o600, role
    context = ssl.create_default_context(cafile=str(certs / "ca.pem"))        # each verifies against the CA
    for role in cluster.ROLES:
        context.load_cert_chain(certs / f"{role}.pem", certs / f"{role}-key.pem")
    before = (certs / "ca.pem").read_bytes()
    assert make_certs(certs) and (certs / "ca.pem").read_bytes() == before       # kept, not remade
    assert make_certs(tmp_path / "other")
    assert (tmp_path / "other" / "ca.pem").read_bytes() != before               # another course, another CA


@pytest.mark.parametrize("address", ["tcp://10.0.0.5:8786", "10.0.0.5:8786", "tcp://127.0.0.1:8786",
                                     "ws://10.0.0.5:8786", "tls://"])
def test_the_command_refuses_a_scheduler_that_is_not_tls(address, tmp_path):
    course = tmp_path / "course"
    done = subprocess.run([sys.executable, "-m", "autograder.grade", "autograde", str(SAMPLES), "--students",
                           "correct", "--course", str(course), "--scheduler", address],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "TLS only" in done.stderr and "make cluster-certs" in done.stderr and "--tls-ca-file" in done.stderr
    assert not course.exists()                                            # nothing was copied or graded
    with pytest.raises(ValueError, match="TLS only"):
        grade.autograde(SAMPLES, course=course, students=["correct"], scheduler=address)
    assert not course.exists()


def test_the_command_without_certificates_says_how_to_make_them(tmp_path):
    done = subprocess.run([sys.executable, "-m", "autograder.grade", "autograde", str(SAMPLES), "--course",
                           str(tmp_path / "course"), "--scheduler", "tls://127.0.0.1:8786",
                           "--certs", str(tmp_path / "none")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no course certificates" in done.stderr and "make cluster-certs" in done.stderr


def test_a_worker_with_another_grader_fails_the_submission_instead_of_guessing_its_points():
    files = grader.submission_files(SAMPLES / "correct")
    result = grader.grade_bytes("05_gru", files, points=("0" * 64, b"\0" * 32))
    assert result["failure"] and "differs from the instructor's" in result["failure"] and result["score"] == 0
    digest = grader.submission_digest(SAMPLES / "correct" / "05_gru.ipynb", "05_gru")
    assert digest and grader.point_key(digest) != grader.point_key("0" * 64)


def test_the_class_is_graded_over_tls_and_nothing_readable_crosses_the_network(tls_cluster, tmp_path):
    with cluster.client(tls_cluster["address"], tls_cluster["certs"]) as client:
        def tripwire():             # on the worker: asking for the instructor's key is a failure
            from autograder import grader as on_worker

            def refuse():
                on_worker.key_asked = getattr(on_worker, "key_asked", 0) + 1
                raise RuntimeError("a worker asked for the instructor's fresh-point key")
            on_worker.fresh_key = refuse
        client.run(tripwire)
    relay = Relay(int(tls_cluster["address"].rsplit(":", 1)[1]))
    records = {r["student"]: r for r in grade.autograde(
        SAMPLES, course=tmp_path / "course", students=CLASS, scheduler=f"tls://127.0.0.1:{relay.port}",
        certs=tls_cluster["certs"])}
    assert set(records) == set(CLASS)
    honest = records["correct"]
    assert (honest["status"], honest["score"]) == ("graded", honest["max_score"]) and honest["max_score"] > 0, honest
    assert records["wrong_gate_order"]["status"] == "graded"
    assert records["wrong_gate_order"]["score"] < records["wrong_gate_order"]["max_score"]
    with cluster.client(tls_cluster["address"], tls_cluster["certs"]) as client:
        asked = client.run(lambda: getattr(__import__("autograder.grader").grader, "key_asked", 0))
    assert set(asked.values()) == {0}, asked
    seen = bytes(relay.seen)
    submission = (SAMPLES / "correct" / "05_gru.ipynb").read_bytes()
    assert ANSWER in submission and len(seen) > len(submission)          # the task went through the relay
    assert ANSWER not in seen and b"nbformat" not in seen                  # but not in a form anyone can read
    digest = grader.submission_digest(SAMPLES / "correct" / "05_gru.ipynb", "05_gru")
    assert grader.point_key(digest) not in seen and grader.fresh_key() not in seen


# One attempt to connect as a Dask client, in a process of its own (as an attacker's would be): in one
# process, a refused Client left to the garbage collector can close itself, from __del__, while the next
# Client is starting on the same thread, and the two wait on the loop runner's lock forever (seen, in a
# busy run, as a hang of the whole suite).
ROGUE = """
import sys
from distributed import Client
from distributed.security import Security
from autograder import cluster
address, certificate = sys.argv[1:]
security = {"own": Security.temporary, "none": lambda: None}.get(certificate, lambda: cluster.security(certificate))()
try:
    client = Client(address, security=security, timeout="10s")
except (OSError, TypeError) as err:          # (TypeError: no certificate at all, Dask does not try)
    print("refused", type(err).__name__)
else:
    print("connected", *client.run(lambda: "ran on a worker").values())
"""


def rogue_client(address: str, certificate: str) -> str:
    """What a Dask client at ``address`` with ``certificate`` (its own, ``none``, or a folder of
    another course's) got: "refused ..." or "connected ..."."""
    tried = subprocess.run([sys.executable, "-c", ROGUE, address, certificate], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
    return tried.stdout + tried.stderr[-2000:]


def test_a_rogue_client_cannot_connect_run_code_or_read_a_task(tls_cluster, tmp_path):
    address, certs = tls_cluster["address"], tls_cluster["certs"]
    other_course = make_certs(tmp_path / "other-course")
    for target, certificate in [(address, "own"), (address, str(other_course)), (address, "none"),
                                (address.replace("tls://", "tcp://"), "none")]:     # and plain TCP
        got = rogue_client(target, certificate)
        assert got.startswith("refused"), (target, certificate, got)
    assert rogue_client(address, str(certs)).startswith("connected ran on a worker")   # the course's own: it connects
    # the same requests with the course's certificate do run: what refuses the rogue is its certificate
    made = tmp_path / "by-the-instructor"
    call(address, course_context(certs), "run_function", function=dumps(touch), args=dumps((str(made),)))
    assert made.exists()
    for target, op in [(address, "run_function"), (tls_cluster["workers"][0], "run"), (address, "identity"),
                       (address, "who_has")]:
        planted = tmp_path / f"by-a-rogue-{op}"
        with pytest.raises(OSError):
            call(target, rogue_context(), op, **({"function": dumps(touch), "args": dumps((str(planted),))}
                                               if op in ("run_function", "run") else {}))
        assert not planted.exists(), op
    with pytest.raises(OSError):                       # the worker's own port, in plain TCP
        call(tls_cluster["workers"][0].replace("tls://", "tcp://"), None, "run",
             function=dumps(touch), args=dumps((str(tmp_path / "plain"),)))
    assert not (tmp_path / "plain").exists()


def dumps(value) -> bytes:
    from distributed.protocol import pickle
    return pickle.dumps(value)
