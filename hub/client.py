"""A user of the hub over HTTP, as a script sees it: log in, start a server, call it.

Used by the tests and by bench/hub_load.py. Everything goes through the hub's public
address: the login form, the hub's REST API (``/hub/api``), and the user's own
server behind the proxy (``/user/NAME/...``): Jupyter's contents API, nbgrader's
assignment list (``assignments``) and, for the instructor, formgrader's API.
"""
from __future__ import annotations

import json
import time
from urllib.parse import quote

import requests


class HubError(RuntimeError):
    pass


class HubUser:
    def __init__(self, url: str, name: str, password: str):
        self.url, self.name = url.rstrip("/"), name
        self.session = requests.Session()
        form = self.session.get(f"{self.url}/hub/login", timeout=60)
        xsrf = self.session.cookies.get("_xsrf", "")
        reply = self.session.post(f"{self.url}/hub/login?next=", timeout=120, allow_redirects=False,
                                  data={"username": name, "password": password, "_xsrf": xsrf})
        if reply.status_code != 302 or "jupyterhub-session-id" not in self.session.cookies:
            raise HubError(f"{name} could not log in (HTTP {reply.status_code}, login page {form.status_code})")
        reply = self.session.post(f"{self.url}/hub/api/users/{name}/tokens", timeout=60,
                                  headers={"X-XSRFToken": self.session.cookies.get("_xsrf", xsrf)},
                                  json={"note": "course client", "expires_in": 3600})
        self._check(reply, "create an API token")
        self.token = reply.json()["token"]
        self.api = requests.Session()
        self.api.headers["Authorization"] = f"token {self.token}"

    def _check(self, reply, doing):
        if reply.status_code >= 400:
            raise HubError(f"{self.name} could not {doing}: HTTP {reply.status_code} {reply.text[:300]}")
        return reply

    def start_server(self, timeout_s: float = 180):
        reply = self.api.post(f"{self.url}/hub/api/users/{self.name}/server", timeout=60)
        if not (reply.status_code == 400 and "already running" in reply.text):
            self._check(reply, "start a server")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                reply = self.api.get(f"{self.url}/hub/api/users/{self.name}", timeout=60)
            except requests.Timeout:          # a hub busy starting a class: ask again
                continue
            if self._check(reply, "read its state").json().get("servers", {}).get("", {}).get("ready"):
                return
            time.sleep(1)
        raise HubError(f"{self.name}'s server did not start within {timeout_s} s")

    def stop_server(self):
        self.api.delete(f"{self.url}/hub/api/users/{self.name}/server", timeout=60)

    def server(self, method: str, path: str, doing: str, timeout: float = 600, **kwargs):
        """Call the user's own server at /user/NAME/PATH."""
        reply = self.api.request(method, f"{self.url}/user/{self.name}/{path.lstrip('/')}",
                                 timeout=timeout, **kwargs)
        if reply.status_code in (403, 424, 503):        # the hub answering for a server that is not there?
            state = self.api.get(f"{self.url}/hub/api/users/{self.name}", timeout=60)
            doing += f" (the hub says of {self.name}'s servers: {state.text[:300]})"
        return self._check(reply, doing)

    # Jupyter's contents API
    def read_file(self, path: str) -> dict:
        return self.server("GET", f"api/contents/{quote(path)}?content=1", f"read {path}").json()

    def write_notebook(self, path: str, notebook: dict):
        self.server("PUT", f"api/contents/{quote(path)}", f"save {path}",
                    json={"type": "notebook", "format": "json", "content": notebook})

    # nbgrader's assignment list, as the Assignments tab calls it
    def assignments(self, course_id: str) -> list:
        reply = self.server("GET", f"assignments?course_id={course_id}", "list assignments").json()
        if not reply.get("success"):
            raise HubError(f"{self.name}: listing assignments failed: {reply.get('value')}")
        return reply["value"]

    def assignment_action(self, action: str, course_id: str, assignment_id: str) -> dict:
        reply = self.server("POST", f"assignments/{action}", f"{action} {assignment_id}",
                            data={"course_id": course_id, "assignment_id": assignment_id}).json()
        if not reply.get("success"):
            raise HubError(f"{self.name}: {action} {assignment_id} failed: {reply.get('value')}")
        return reply

    # formgrader's API (instructor)
    def formgrader(self, path: str, doing: str) -> dict:
        reply = self.server("POST", f"formgrader/api/{path}", doing).json()
        if isinstance(reply, dict) and reply.get("success") is False:
            raise HubError(f"{self.name}: {doing} failed: {json.dumps(reply)[:2000]}")
        return reply
