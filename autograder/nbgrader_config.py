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
# messages, a summary on top, and never a hidden test. The student's text is cut to a
# bounded size (LimitText) after the hidden tests are gone; the page is made safe last, by
# its exporter (FeedbackPage: its whole body through nh3, no script, nothing loaded).
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "autograder.nbgrader_plugin.CourseFeedback",
    "autograder.nbgrader_plugin.LimitText",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
c.GenerateFeedback.exporter_class = "autograder.nbgrader_plugin.FeedbackPage"
# Every page nbconvert makes here (formgrader's and the feedback's) renders the student's markdown
# with the course's filter, which sanitises after everything that writes HTML (equations typeset
# from the parser's tokens, then nh3), and keeps links as the sanitiser left them; raw cells are
# not rendered.
c.HTMLExporter.filters = {"markdown2html": "autograder.nbgrader_plugin.page_markdown",
                          "strip_files_prefix": "autograder.nbgrader_plugin.as_written"}
c.HTMLExporter.raw_mimetypes = []
