"""What every nbgrader run of the grader imports, imported once by the fork server that
``nbgrader_runs.run`` forks each run from (multiprocessing's forkserver preload), instead of once per
run (about 2.7 s of CPU each: nbgrader, nbconvert, nbformat's jsonschema, DyNet and the checks), and
what each run would otherwise compute again (below).

Importing this module is what it is for; nothing else imports it. It creates no application,
gradebook or logger: traitlets' singletons (``NbGraderApp.instance()``) are made in each run's own
process. DyNet reads its settings once, at ``import dynet``; it is started here as the grader starts
it (``course.runtime``'s defaults, as ``grader.score_notebook`` asks), so every run inherits the
same settings. On the GPU (COURSE_GPU=1) it is not: CUDA does not survive a fork, so each run
starts DyNet itself, after the fork.

A run that creates a gradebook (the first ``generate_assignment`` of a course directory) gets
nbgrader's schema revision from :func:`alembic_head`, read here once: nbgrader itself starts an
``alembic heads`` process for it each time (seconds of imports per new course directory).
"""
from pathlib import Path

from course import runtime

if not runtime.gpu_requested():
    runtime.dynet()

import jsonschema  # noqa: E402,F401  (nbformat's validation; its URI grammar alone is ~0.9 s)
import nbconvert  # noqa: E402,F401
import nbformat  # noqa: E402
import sqlalchemy.orm  # noqa: E402
from nbgrader.apps import nbgraderapp  # noqa: E402,F401  (every nbgrader app and its preprocessors)

import autograder.feedback  # noqa: E402,F401  (the feedback pages' exporter and filters)
import autograder.nbgrader_runs  # noqa: E402,F401  (the runs' entry point, nbgrader_runs._main)
import autograder.late_policy  # noqa: E402,F401
import autograder.nbgrader_plugin  # noqa: E402,F401
import autograder.reference.grading  # noqa: E402  (the checks, with DyNet)
import nbgrader.api  # noqa: E402

# Work each run repeated after its fork (profiled with py-spy: about 0.5 s of CPU per submission),
# done here once: importing every chapter's checks (from source where no bytecode was written; they
# import DyNet, so not on the GPU), compiling nbformat's schema validators
# (fastjsonschema; nbconvert validates strictly and relaxed), configuring the gradebook's mappers.
if not runtime.gpu_requested():
    autograder.reference.grading.all_checks()
for relaxed in (False, True):
    nbformat.validator.get_validator(4, nbformat.v4.nbformat_minor, relax_add_props=relaxed)
sqlalchemy.orm.configure_mappers()


def alembic_head() -> str:
    """nbgrader's newest schema revision, read from its own migrations in this process: what
    ``alembic heads`` prints, which is what nbgrader.api.get_alembic_version runs a process for."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    config = Config()
    config.set_main_option("script_location", str(Path(nbgrader.api.__file__).parent / "alembic"))
    return ScriptDirectory.from_config(config).get_current_head()


_HEAD = alembic_head()
nbgrader.api.get_alembic_version = lambda: _HEAD
