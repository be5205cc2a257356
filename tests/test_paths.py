"""The course's folder is found however the package is installed: in the repository, as
`pip install -e .` of the release, and as `pip install .`, which copies the package alone into
site-packages (Jupyter then starts a notebook's kernel in the notebook's folder)."""
import os
import shutil
import subprocess
import sys

from tests.conftest import ROOT

PROBE = ("from course import paths, corpora\n"
         "print(paths.ROOT)\n"
         "try:\n    print(sorted(corpora.corpus_files('course')))\n"
         "except corpora.CorpusError as err:\n    print('error:', err)\n")


def installed_alone(tmp_path):
    """The package as `pip install .` leaves it (no data beside it), and a release folder."""
    site = tmp_path / "site-packages"
    shutil.copytree(ROOT / "course", site / "course", ignore=shutil.ignore_patterns("__pycache__"))
    release = tmp_path / "release"
    shutil.copytree(ROOT / "data" / "course", release / "data" / "course")
    shutil.copytree(ROOT / "course", release / "course", ignore=shutil.ignore_patterns("__pycache__"))
    (release / "lectures").mkdir()
    return site, release


def run_probe(site, cwd, **extra):
    env = {k: v for k, v in os.environ.items() if k != "COURSE_ROOT"}
    env.update(PYTHONPATH=str(site), **extra)
    # -I would drop PYTHONPATH; -c puts the working folder first, so start in a folder with no course/
    done = subprocess.run([sys.executable, "-c", "import sys; sys.path.remove(''); exec(open(sys.argv[1]).read())",
                           str(site.parent / "probe.py")], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_an_installed_package_finds_the_release_from_a_notebooks_folder(tmp_path):
    site, release = installed_alone(tmp_path)
    (tmp_path / "probe.py").write_text(PROBE)
    root, files = run_probe(site, release / "lectures")
    assert root == str(release.resolve())
    assert files == "['test', 'train', 'valid']"


def test_outside_the_course_the_error_names_the_real_fix(tmp_path):
    site, release = installed_alone(tmp_path)
    (tmp_path / "probe.py").write_text(PROBE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root, error = run_probe(site, elsewhere)
    assert error.startswith("error:") and "COURSE_ROOT" in error and "make-corpus" not in error, error
    root, files = run_probe(site, elsewhere, COURSE_ROOT=str(release))      # the fix the message names
    assert root == str(release.resolve()) and files == "['test', 'train', 'valid']"
