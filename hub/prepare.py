"""Prepare the hub's root folder from this checkout (``make hub`` runs it; run as root).

    python -m hub.prepare --roster ROSTER [--root DIR]

The hub serves from its own copies, never from this checkout: the student release
and the course environment are readable by everyone; the instructor's copy of the
repository (the grader, ``solutions/``, ``autograder/reference/``) and the course
directory (source notebooks, gradebook) live in the instructor's home, mode 0700.
Running it again refreshes the release, the grader copy and the configuration; it
keeps the accounts, the gradebook, the exchange and every home.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from autograder import chapters
from hub import accounts
from hub.layout import COURSE_ID, Layout
from course.paths import ROOT

# What the instructor's grader copy holds: the grader, the solutions, the package and
# data it imports, and hub/ (the exchange's safe collect step runs in nbgrader as the instructor).
GRADER_PARTS = ["autograder", "course", "data/course", "data/README.md", "solutions", "hub", "pyproject.toml"]
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "*.egg-info", "work")
# nbgrader's extensions a student does not get: the instructor's tools.
INSTRUCTOR_ONLY_SERVER = ["nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.course_list"]
INSTRUCTOR_ONLY_LAB = ["@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:course-list",
                       "@jupyter/nbgrader:create-assignment"]


class PrepareError(RuntimeError):
    pass


def check_reachable(root: Path):
    """Students' servers run as the students: every folder above the root must let them through."""
    for folder in reversed([root, *root.parents]):     # from / down: name the first that stops them
        if folder.exists() and not folder.stat().st_mode & stat.S_IXOTH:
            raise PrepareError(f"{folder} is not traversable by other users (mode "
                               f"{stat.filemode(folder.stat().st_mode)}), so students could not reach "
                               f"the course environment under {root}: choose a root outside it "
                               "(e.g. /srv/rnnlm-course) with --root or COURSE_HUB_ROOT")


def readable_by_all(path: Path):
    subprocess.run(["chmod", "-R", "u+rwX,go+rX,go-w", str(path)], check=True)


def build_release(layout: Layout):
    from autograder.release import build
    fresh = build(layout.root / "release.new")
    shutil.rmtree(layout.release, ignore_errors=True)    # the environment's editable install points here
    fresh.rename(layout.release)
    readable_by_all(layout.release)


def reachable_by_all(path: Path) -> bool:
    path = Path(path).resolve()
    return all(p.stat().st_mode & stat.S_IXOTH for p in [path, *path.parents])


def course_python() -> str:
    """An interpreter every user may run: a Python under root's home (pyenv) is not one."""
    for candidate in (getattr(sys, "_base_executable", sys.executable), "/usr/bin/python3"):
        if not (candidate and Path(candidate).exists() and reachable_by_all(candidate)):
            continue
        version = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2] >= (3, 11) "
                                  "and sys.version_info[:2] < (3, 13))"], capture_output=True, text=True)
        if version.stdout.strip() == "True":
            return candidate
    raise PrepareError("no Python 3.11 or 3.12 that every user may run: install Debian's python3 and "
                       "python3-venv (apt-get install python3-venv), or a Python outside root's home")


def build_env(layout: Layout):
    """The course environment: the student release with the extras a hub's servers need (the
    single-user server's jupyterhub; the grader's, for formgrader's autograde button)."""
    python = course_python()
    stamp = hashlib.sha256((layout.release / "pyproject.toml").read_bytes() + python.encode()).hexdigest()
    stamp_file = layout.env / ".course-release"
    if stamp_file.exists() and stamp_file.read_text() == stamp:
        return
    shutil.rmtree(layout.env, ignore_errors=True)
    subprocess.run([python, "-m", "venv", "--without-pip", str(layout.env)], check=True)
    # this checkout's pip installs into it (faster than the interpreter's own, often older, pip)
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(layout.env / "bin" / "python"),
                              "install", "--quiet", "-e", f"{layout.release}[hub,grader]"], capture_output=True, text=True)
    if install.returncode != 0:
        raise PrepareError(f"installing the course environment failed:\n{install.stderr[-3000:]}")
    stamp_file.write_text(stamp)
    readable_by_all(layout.env)


def write_role_configs(layout: Layout, instructor: str):
    """One JUPYTER_CONFIG_PATH per role: the exchange, and which nbgrader tools show."""
    exchange = (f"c = get_config()  # noqa: F821\n"
                f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
                f"c.Exchange.root = {str(layout.exchange)!r}\n")
    course = layout.course_dir(instructor) / "nbgrader_config.py"
    # the instructor's nbgrader, wherever it starts (the server's working folder is the home)
    course_dir = (f"c.CourseDirectory.root = {str(course.parent)!r}\n"
                  f"load_subconfig({str(course)!r})  # noqa: F821\n")
    for role in ("student", "instructor"):
        folder = layout.role_config(role)
        (folder / "labconfig").mkdir(parents=True, exist_ok=True)
        (folder / "nbgrader_config.py").write_text(exchange + (course_dir if role == "instructor" else ""))
        off = role == "student"
        server = {"ServerApp": {"jpserver_extensions": {name: not off for name in INSTRUCTOR_ONLY_SERVER}}}
        lab = {"disabledExtensions": {name: True for name in INSTRUCTOR_ONLY_LAB} if off else {}}
        (folder / "jupyter_server_config.json").write_text(json.dumps(server, indent=1))
        (folder / "labconfig" / "page_config.json").write_text(json.dumps(lab, indent=1))
    readable_by_all(layout.config)


def make_exchange(layout: Layout, instructor: str):
    """nbgrader's exchange, made before any student logs in so that no student owns a part of it."""
    ids = accounts.pwd.getpwnam(instructor)
    layout.exchange.mkdir(exist_ok=True)
    os.chown(layout.exchange, 0, 0)
    os.chmod(layout.exchange, 0o1777)
    course = layout.exchange / COURSE_ID
    # inbound: students may add, never list, and (sticky) never rename or remove another's entry
    for folder, mode in ((course, 0o755), (course / "outbound", 0o755), (course / "inbound", 0o1733),
                         (course / "feedback", 0o711)):
        folder.mkdir(exist_ok=True)
        os.chown(folder, ids.pw_uid, ids.pw_gid)
        os.chmod(folder, mode)


def server_env(layout: Layout, name: str) -> dict:
    """The environment of NAME's single-user server (and of commands run as NAME)."""
    instructor = accounts.roles(layout)["instructor"]
    role = "instructor" if name == instructor else "student"
    env = {"JUPYTER_CONFIG_PATH": str(layout.role_config(role)),
           "PATH": f"{layout.env / 'bin'}:/usr/local/bin:/usr/bin:/bin",
           "MPLBACKEND": "Agg"}
    if role == "instructor":
        env["PYTHONPATH"] = str(layout.grader(name))      # `autograder` (and `hub.exchange`) import
    return env


def instructor_course(layout: Layout, instructor: str, students: list):
    """The grader copy and the nbgrader course directory, in the instructor's private home."""
    ids = accounts.pwd.getpwnam(instructor)
    grader = layout.grader(instructor)
    shutil.rmtree(grader, ignore_errors=True)
    for part in GRADER_PARTS:
        source, target = ROOT / part, grader / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=IGNORE, symlinks=False)
        else:
            shutil.copy(source, target)
    course = layout.course_dir(instructor)
    course.mkdir(exist_ok=True)
    shutil.copy(ROOT / "hub" / "nbgrader_config.py", course / "nbgrader_config.py")
    for stem in chapters.stems():                    # the assignments: the chapter manifest
        solution = grader / "solutions" / f"{stem}.ipynb"
        target = course / "source" / stem / solution.name
        if not target.exists():                      # the instructor's edits stay
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(solution, target)
    subprocess.run(["chown", "-R", f"{ids.pw_uid}:{ids.pw_gid}", str(grader), str(course)], check=True)
    subprocess.run(["chmod", "-R", "go-rwx", str(grader), str(course)], check=True)
    add_students = ("import sys\nfrom nbgrader.api import Gradebook\nfrom autograder import late_policy\n"
                    f"with Gradebook('sqlite:///gradebook.db', {COURSE_ID!r}) as gb:\n"
                    "    for name in sys.argv[1:]:\n        gb.update_or_create_student(name)\n"
                    "    late_policy.set_due_dates(gb)\n")       # every chapter of the manifest
    accounts.as_user(instructor, [str(layout.env / "bin" / "python"), "-c", add_students, *students],
                     cwd=course, env=server_env(layout, instructor), check=True)


def link_lectures(layout: Layout, students: list):
    """~/lectures in every student's home: the release's lectures (read-only), where the link
    above each answer cell (../lectures/NN_topic.ipynb, from ~/NN_topic/) finds them. A folder
    the student made there is left alone."""
    for name in students:
        link = layout.home(name) / "lectures"
        if link.is_symlink():
            link.unlink()
        if not link.exists():
            link.symlink_to(layout.release / "lectures", target_is_directory=True)


def prepare(layout: Layout, roster: Path) -> dict:
    members = accounts.read_roster(roster)
    check_reachable(layout.root)
    layout.root.mkdir(parents=True, exist_ok=True)
    os.chmod(layout.root, 0o755)
    layout.state.mkdir(exist_ok=True)
    os.chmod(layout.state, 0o700)
    build_release(layout)
    build_env(layout)
    accounts.create(layout, members)
    roles = accounts.roles(layout)
    write_role_configs(layout, roles["instructor"])
    make_exchange(layout, roles["instructor"])
    instructor_course(layout, roles["instructor"], roles["students"])
    link_lectures(layout, roles["students"])
    return roles


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--roster", required=True, help="instructor and students, one a line (hub/roster.example)")
    parser.add_argument("--root", help="the hub's root folder (default: $COURSE_HUB_ROOT or /srv/rnnlm-course)")
    args = parser.parse_args(argv)
    layout = Layout.at(args.root)
    try:
        accounts.read_roster(Path(args.roster))            # a mistake is named before anything is made
        if os.geteuid() != 0:
            raise PrepareError("preparing the hub makes Unix accounts: run it as root (sudo make hub)")
        roles = prepare(layout, Path(args.roster))
    except (OSError, accounts.RosterError, PrepareError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"hub root {layout.root}: instructor {roles['instructor']}, {len(roles['students'])} students")
    return 0


if __name__ == "__main__":
    sys.exit(main())
