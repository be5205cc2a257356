"""DyNet is configured once per test process, before anything imports it."""
import os

import pytest

from course.paths import ROOT   # the tests import ROOT from here

os.environ.setdefault("MPLBACKEND", "Agg")

from course import runtime  # noqa: E402

runtime.init(seed=1, mem=1024)

SHARED_PTB = ROOT.parent / "shared" / "data" / "ptb"


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
