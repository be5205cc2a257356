# nbgrader configuration of the course (copied into every grading directory).
# See autograder/README.md for why each setting is here.
c = get_config()  # noqa: F821

c.CourseDirectory.course_id = "rnnlm-course"
# Per-cell time limit, sized to the slowest cell under NBGRADER_EXECUTION (training
# cells shrink their runs when that variable is set); autograde --cell-timeout overrides it.
c.Execute.timeout = 300
c.Execute.interrupt_on_timeout = True
# A loop that ignores KeyboardInterrupt must cost its cell, not abort the submission.
c.Execute.raise_on_iopub_timeout = False
# A harmless warning on stderr must not turn a correct answer into 0 points.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"Warning|\[dynet\]"
# A deleted grade cell is put back (and then fails), instead of silently scoring nothing.
c.OverwriteCells.add_missing_cells = True
c.ClearSolutions.code_stub = {"python": 'raise NotImplementedError("Student exercise: replace this line with your code")'}
c.ClearSolutions.enforce_metadata = True
