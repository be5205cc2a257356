# nbgrader configuration of the course. A course directory loads it from its own
# nbgrader_config.py with `load_subconfig("<this repository>/autograder/nbgrader_config.py")`
# (`make autograde` and the hub write that line). See autograder/README.md for why.
c = get_config()  # noqa: F821

c.CourseDirectory.course_id = "rnnlm-course"
c.ClearSolutions.code_stub = {"python": 'raise NotImplementedError("Student exercise: replace this line with your code")'}
c.ClearSolutions.enforce_metadata = True
# A deleted grade cell is put back (and graded like any other), instead of silently scoring nothing.
c.RestoreCells.add_missing_cells = True

# Sanitising as nbgrader does it, with two of its steps made robust to copied answer
# cells and deleted test cells (see autograder/nbgrader_plugin.py). KnownCells comes
# before nbgrader's first step that reads the marks (DeduplicateIds): it removes marks
# nbgrader cannot read.
c.Autograde.sanitize_preprocessors = [
    "nbgrader.preprocessors.ClearOutput",
    "autograder.nbgrader_plugin.MarkDuplicates",
    "autograder.nbgrader_plugin.KnownCells",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "autograder.nbgrader_plugin.RestoreCells",
    "autograder.nbgrader_plugin.SanitizeHtml",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# One grader. nbgrader's Execute would run the submission in a kernel with the
# instructor's rights; GradeInSandbox scores it with the confined grader instead and
# writes each test cell's trusted points and check messages as the cell's output,
# which nbgrader's own SaveAutoGrades stores in the gradebook.
# Late work: the course's policy (autograder/deadlines.toml) as nbgrader's late-submission plugin
c.AssignLatePenalties.plugin_class = "autograder.late_policy.CoursePenalty"
c.Autograde.autograde_preprocessors = [
    "autograder.nbgrader_plugin.GradeInSandbox",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# The feedback students get: their notebook with its scores, each test cell's check
# messages, a summary on top, and never a hidden test.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "autograder.nbgrader_plugin.SanitizeHtml",
    "autograder.nbgrader_plugin.CourseFeedback",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
