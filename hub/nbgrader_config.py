# nbgrader configuration of the hub's instructor course directory
# (hub/prepare.py copies it to ~INSTRUCTOR/rnnlm-course/; docs/teaching.md).
# The exchange's root and the course id come from the role's JUPYTER_CONFIG_PATH, whose
# nbgrader_config.py loads this file (the instructor's server runs in the home folder).
import os

c = get_config()  # noqa: F821

# The course's grader: the instructor's copy of the repository (~INSTRUCTOR/grader, also on the
# instructor's PYTHONPATH). Its configuration decides what `nbgrader autograde` runs, from the
# command line or formgrader's button, and what `nbgrader generate_feedback` writes.
GRADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "grader")
GRADER_CONFIG = os.path.join(GRADER, "autograder", "nbgrader_config.py")
if not os.path.exists(GRADER_CONFIG):      # load_subconfig would skip a missing file silently
    raise FileNotFoundError(f"the course's grader is missing: {GRADER_CONFIG} (run `make hub` again)")
load_subconfig(GRADER_CONFIG)  # noqa: F821

# Collect copies only regular files the submitting student owns (hub/exchange.py).
c.ExchangeFactory.collect = "hub.exchange.SafeCollect"
