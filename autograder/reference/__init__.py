"""Instructor-only reference code: the graded cells and the weighted-sum extraction.

Nothing in this package may be imported by ``course/`` or shipped in the student
release (see ``autograder/reference/cells.py`` for the rule).
"""
