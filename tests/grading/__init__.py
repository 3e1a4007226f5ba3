"""Grading of the course labs with pytest.

- :mod:`grading.plugin`: the pytest plugin (``points`` marker, ``partial_credit`` fixture,
  default timeouts, ``pytest --grade`` with a points table and a Gradescope ``results.json``).
- :mod:`grading.manifest`: checksums and pristine copies of the course's own test files and
  pytest configuration, checked before a local ``pytest --grade``
  (``python tests/grading/manifest.py write|check|restore``).
- :mod:`grading.runner`: the autograder's grader (Gradescope's ``run_autograder`` and batch
  grading). It never imports learner code: the graded tests run in a trusted pytest
  process where the learner's functions are proxies (:mod:`grading.proxy`) to a worker
  process (:mod:`grading.worker`, started by :mod:`grading.sandbox` as an unprivileged
  user, in PID and network namespaces) whose results come back as plain data only
  (:mod:`grading.wire`); the score comes from the trusted run's JUnit XML report
  (:mod:`grading.junit`) and the course's declared tests (:mod:`grading.catalog`), with
  :mod:`grading.layout` finding the expected files in a submission.
- ``submission.json``: what a learner submits; ``results.schema.json``: JSON Schema of
  Gradescope's autograder results file.

The package is importable as ``grading`` because ``pyproject.toml`` puts ``tests/`` on
``sys.path`` (``[tool.pytest.ini_options] pythonpath``).
"""
