"""Grading of the course labs with pytest.

- :mod:`grading.plugin`: the pytest plugin (``points`` marker, ``partial_credit`` fixture,
  default timeouts, ``pytest --grade`` with a points table and a Gradescope ``results.json``,
  and the guard of the autograder's child runs, ``--grade-guard``).
- :mod:`grading.manifest`: checksums and pristine copies of the course's own test files and
  pytest configuration, checked before a local ``pytest --grade``
  (``python tests/grading/manifest.py write|check|restore``).
- :mod:`grading.runner`: the autograder's grader (Gradescope's ``run_autograder`` and batch
  grading): runs the learner's code only in child pytest processes and scores from pytest's
  JUnit XML report; with :mod:`grading.layout` (finding the expected files in a submission),
  :mod:`grading.junit` (reading the report safely), :mod:`grading.catalog` (the points,
  learner files and written questions, read without running anything) and
  :mod:`grading.probe` (the import check of the learner's files, in a child).
- ``submission.json``: what a learner submits; ``results.schema.json``: JSON Schema of
  Gradescope's autograder results file.

The package is importable as ``grading`` because ``pyproject.toml`` puts ``tests/`` on
``sys.path`` (``[tool.pytest.ini_options] pythonpath``).
"""
