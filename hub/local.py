"""A throw-away hub on this machine's loopback, for the tests and the load bench.

    with LocalHub(students=["ada", "bob"]) as hub:      # as root
        teacher = hub.login(hub.instructor)

Prepares a root under /tmp with fresh accounts (named with a random tag), starts
JupyterHub on free loopback ports, and on leaving stops it (the proxy and the
users' servers with it), deletes the accounts and removes the root.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

from hub import accounts, prepare
from hub.client import HubUser
from hub.layout import Layout

from course.paths import ROOT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalHub:
    def __init__(self, students: list, log_copy: Path | None = None):
        tag = secrets.token_hex(3)
        self.instructor = f"h{tag}t"
        self.students = [f"h{tag}{name}" for name in students]
        self.passwords = {name: secrets.token_urlsafe(12) for name in [self.instructor, *self.students]}
        self.log_copy, self.process, self.users = log_copy, None, {}

    def __enter__(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="course-hub-", dir="/tmp"))
        os.chmod(self.tmp, 0o755)
        self.layout = Layout.at(self.tmp / "hub")
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self):
        roster = self.tmp / "roster.txt"
        roster.write_text(f"instructor {self.instructor} {self.passwords[self.instructor]}\n" +
                          "".join(f"student {n} {self.passwords[n]}\n" for n in self.students))
        prepare.prepare(self.layout, roster)
        port = free_port()
        bin_dir = Path(sys.executable).parent
        env = {**os.environ, "COURSE_HUB_ROOT": str(self.layout.root), "COURSE_HUB_IP": "127.0.0.1",
               "COURSE_HUB_PORT": str(port), "COURSE_HUB_INTERNAL_PORTS": f"{free_port()},{free_port()}",
               "PATH": f"{bin_dir}:{os.environ['PATH']}"}
        self.log = self.tmp / "jupyterhub.log"
        with open(self.log, "w") as log:
            self.process = subprocess.Popen([str(bin_dir / "jupyterhub"), "-f", str(ROOT / "hub" / "jupyterhub_config.py")],
                                            cwd=self.tmp, env=env, stdout=log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            if self.process.poll() is not None:
                raise RuntimeError("the hub stopped:\n" + self.log.read_text()[-3000:])
            try:
                if requests.get(f"{self.url}/hub/api", timeout=5).status_code == 200:
                    return
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the hub did not answer within 120 s")
            time.sleep(0.5)

    def __exit__(self, *exc):
        if self.process is not None:
            self.process.send_signal(signal.SIGTERM)       # stops the proxy and the users' servers
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
            if self.log_copy:
                shutil.copy(self.log, self.log_copy)
        accounts.remove(self.layout, [self.instructor, *self.students])
        shutil.rmtree(self.tmp, ignore_errors=True)

    def login(self, name) -> HubUser:
        if name not in self.users:
            self.users[name] = HubUser(self.url, name, self.passwords[name])
        return self.users[name]

    def run_as(self, name, code: str, timeout: float = 120):
        """Run Python as NAME with its server's environment (what its terminal or kernel can do);
        the last line it prints is read as JSON."""
        reply = accounts.as_user(name, [str(self.layout.env / "bin" / "python"), "-c", code],
                                 cwd=self.layout.home(name), env=prepare.server_env(self.layout, name),
                                 capture_output=True, text=True, timeout=timeout)
        if reply.returncode != 0:
            raise RuntimeError(f"as {name}: {reply.stderr[-2000:]}")
        return json.loads(reply.stdout.strip().splitlines()[-1])
