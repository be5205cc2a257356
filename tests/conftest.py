"""DyNet is configured once per test process, before anything imports it; the order of the
work under xdist (tests/ordering.py); what a run builds once and every worker reads (once_per_run),
the slowest of it started early, in the background (environments_built_early)."""
import fcntl
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from course.paths import ROOT   # the tests import ROOT from here

os.environ.setdefault("MPLBACKEND", "Agg")

from course import runtime  # noqa: E402

runtime.init(seed=1, mem=1024)

SHARED_PTB = ROOT.parent / "shared" / "data" / "ptb"


def pytest_configure(config):
    from tests import ordering
    ordering.configure(config)
    if not hasattr(config, "workerinput"):             # the controller, or a run without xdist
        config.pluginmanager.register(ordering.Durations(), "test-durations")


@pytest.hookimpl(optionalhook=True)                    # pytest-xdist's, in the controller
def pytest_configure_node(node):
    from tests import ordering
    ordering.configure_node(node)


@pytest.hookimpl(trylast=True)                         # after pytest's own grouping by fixture
def pytest_collection_modifyitems(config, items):
    from tests import ordering
    ordering.modifyitems(config, items)


def run_folder(tmp_path_factory) -> Path:
    """One folder for this whole run, the same for every xdist worker (each worker's own
    temporary folder is a popen-gwN inside it); without xdist, the run's own."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def sandbox_processes() -> list:
    """(parent's pid, command line) of every grading sandbox process on the machine. `ps -ww`: without
    it, under pytest, ps cut its lines at 80 columns, before the module's and the folder's names."""
    out = subprocess.run(["ps", "-ww", "-eo", "ppid,args"], capture_output=True, text=True).stdout
    return [(int(ppid), args) for ppid, _, args in (line.strip().partition(" ") for line in out.splitlines()[1:])
            if "autograder.sandbox" in args]


def once_per_run(tmp_path_factory, name: str, build, wait: bool = True) -> Path | None:
    """The folder ``name``, filled by ``build(folder)`` once per run by whichever worker asks
    first, while the others wait for it (a lock file beside it). A build that raised is
    tried again by the next to ask, from an empty folder. With ``wait=False``, None at once
    when another worker is building it (the caller does other work first)."""
    folder = run_folder(tmp_path_factory) / name
    built = folder.parent / f"{name}.built"             # beside it: the folder holds only what build made
    with open(folder.parent / f"{name}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return None
        if not built.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            built.touch()
    return folder


def build_in_background(tmp_path_factory, name: str, build):
    """once_per_run(name, build) in a thread of this worker, unless a worker is building it already."""
    def run():
        try:
            once_per_run(tmp_path_factory, name, build, wait=False)
        except Exception:              # built again, and the failure reported, by the test that needs it
            pass
    threading.Thread(target=run, name=f"build {name}", daemon=True).start()


@pytest.fixture(scope="session", autouse=True)
def environments_built_early(request, tmp_path_factory):
    """The environments that pip installs from the network, needed minutes into the run, started at
    each worker's first test, beside it: pip waits on the network and the disk much of its time,
    and the tests around it use the cores meanwhile (about 6% of the two cores' time idle otherwise,
    mostly while pip waited). The test that needs one waits for it (once_per_run)."""
    ids = [item.nodeid for item in request.session.items]
    if any(i.startswith("tests/test_student_release.py") and "dynet2.2" in i for i in ids):
        from tests.student import make_student
        build_in_background(tmp_path_factory, "student-dynet2.2", lambda home: make_student(home, "2.2"))
    if any(i.startswith("tests/test_dynet_versions.py") for i in ids):
        from tests.test_dynet_versions import make_environment
        build_in_background(tmp_path_factory, "dynet2.2-suite", make_environment)


@pytest.fixture
def tiny_corpus():
    """A small deterministic corpus with sentences of mixed lengths."""
    import random
    rng = random.Random(7)
    words = "the a cat dog bird sat ran slept on under mat rug tree".split()
    return [[rng.choice(words) for _ in range(rng.randint(1, 9))] for _ in range(60)]


def make_deep(folder, levels: int):
    """``folder``/a/a/... ``levels`` deep, each made relative to the last."""
    os.makedirs(folder, exist_ok=True)
    here = os.getcwd()
    os.chdir(folder)
    try:
        for _ in range(levels):
            os.mkdir("a")
            os.chdir("a")
    finally:
        os.chdir(here)


def remove_deep(folder):
    """What make_deep made, removed from the bottom up (rmtree recurses once per level)."""
    here = os.getcwd()
    os.chdir(folder)
    try:
        depth = 0
        while os.path.isdir("a"):
            os.chdir("a")
            depth += 1
        for _ in range(depth):
            os.chdir("..")
            os.rmdir("a")
    finally:
        os.chdir(here)
