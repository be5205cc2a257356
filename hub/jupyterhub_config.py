# JupyterHub for the course (docs/teaching.md). `make hub` prepares the hub's root and starts it:
#     jupyterhub -f hub/jupyterhub_config.py
# Settings from the environment:
#     COURSE_HUB_ROOT   the hub's root folder (default /srv/rnnlm-course; hub/layout.py)
#     COURSE_HUB_IP     where the hub listens (default 127.0.0.1: this machine only; 0.0.0.0 for a
#                       class, behind TLS: docs/teaching.md)
#     COURSE_HUB_PORT   its port (default 8000)
#     COURSE_HUB_INTERNAL_PORTS  "HUB_API,PROXY_API" on loopback (default 8081,8001)
import os

from hub import accounts
from hub.layout import Layout
from hub.prepare import server_env

c = get_config()  # noqa: F821
layout = Layout.at()
ip = os.environ.get("COURSE_HUB_IP", "127.0.0.1")
port = int(os.environ.get("COURSE_HUB_PORT", "8000"))
hub_api_port, proxy_api_port = map(int, os.environ.get("COURSE_HUB_INTERNAL_PORTS", "8081,8001").split(","))

c.JupyterHub.bind_url = f"http://{ip}:{port}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = hub_api_port
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.pid_file = str(layout.state / "jupyterhub-proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{layout.state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(layout.state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(layout.state / "jupyterhub.pid")

# Who may log in: the accounts hub/accounts.py made from the roster, with their Unix passwords.
roles = accounts.roles(layout)
c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_users = {roles["instructor"], *roles["students"]}
c.Authenticator.admin_users = set()          # nobody may open another user's server

# Each user's own server, as their own Unix user, in the course environment.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(layout.env / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/tree"              # Notebook's file list, with nbgrader's Assignments tab
c.Spawner.start_timeout = 120                # a class logging in at once on a small machine
c.Spawner.http_timeout = 120


def course_server(spawner):
    name = spawner.user.name
    spawner.environment = {**spawner.environment, **server_env(layout, name)}
    if name == roles["instructor"]:           # formgrader works on the course directory
        spawner.notebook_dir = str(layout.course_dir(name))


c.Spawner.pre_spawn_hook = course_server
