"""The course kit's machinery: build, learner copies, grading, progress, agenda, bench, coverage, drift.

No chapter and nothing in :mod:`helpers` imports this package (a test keeps it so): a
learner reads ``helpers``; maintainers and instructors run ``python -m course.<command>``.
"""
