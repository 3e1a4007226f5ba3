"""Grading of the course labs with pytest.

- :mod:`grading.plugin`: the pytest plugin (``points`` marker, ``partial_credit`` fixture,
  default timeouts, ``pytest --grade`` with a points table and a Gradescope ``results.json``).
- :mod:`grading.manifest`: checksums and pristine copies of the course's own test files,
  restored before grading (``python tests/grading/manifest.py write|check|restore``).
- ``results.schema.json``: JSON Schema of Gradescope's autograder results file.

The package is importable as ``grading`` because ``pyproject.toml`` puts ``tests/`` on
``sys.path`` (``[tool.pytest.ini_options] pythonpath``).
"""
