# Thin wrappers over the project's entry points. `make help` lists them.
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
# requirements.lock pins every package (dependencies + book + dev extras) to one version with its
# SHA-256 hashes; `make lock` writes it with uv (https://docs.astral.sh/uv/pip/compilation/),
# `make setup` installs exactly it. uv's own version is pinned here.
LOCK := requirements.lock
UV_VERSION := 0.13.9
LOCK_COMPILE = $(PYTHON) -m uv pip compile pyproject.toml --extra book --extra dev --universal \
	--python-version 3.11 --generate-hashes --custom-compile-command "make lock" --quiet --output-file $(LOCK)

.PHONY: help quickstart setup lock upgrade-lock run test book bench check grade grade-lab01 grade-lab02 student-edition autograder \
	grade-submissions submission clean upstream-oracle test-upstream

help:  ## list the targets
	@grep -E '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

quickstart: setup run book  ## first command of the README: install, run the main job, build the book

setup:  ## install the exact versions of requirements.lock, then the project itself (editable)
	$(PIP) install --require-hashes -r $(LOCK)
	$(PIP) install --no-deps --no-build-isolation -e .

lock:  ## re-resolve requirements.lock after a change to pyproject.toml (pins that still fit are kept)
	$(PIP) install --quiet "uv==$(UV_VERSION)"
	$(LOCK_COMPILE)

upgrade-lock:  ## move every pin to the newest release pyproject.toml allows, install it, run the suite
	$(PIP) install --quiet "uv==$(UV_VERSION)"
	$(LOCK_COMPILE) --upgrade
	$(MAKE) setup test

run:  ## the main job: compare placement policies on the embedded synthetic workload
	$(PYTHON) -m lab01_cluster_sim compare

# -n auto: one pytest-xdist worker per core; --dist loadfile: a file's tests run on one worker, so a
# module-scoped fixture (the autograder's batch run, the browser's page tour) is built once. Not
# loadgroup: with pytest 9.2 its xdist_group marks are silently ignored (pytest-xdist issue #1386).
# The book is built once per run and shared by every worker (tests/build_once.py).
test:  ## second command of the README: the whole test suite on every core; lists the 20 slowest tests
	$(PYTHON) -m pytest -n auto --dist loadfile --durations=20

upstream-oracle:  ## build the upstream oracle (kube-scheduler, Kueue, Karpenter Go code) into tools/upstream/bin/
	tools/upstream/build.sh

test-upstream: upstream-oracle  ## the differential tests against the upstream oracle, 3000 cases per test
	UPSTREAM_EXAMPLES=3000 $(PYTHON) -m pytest tests/upstream -q -p no:cacheprovider

book:  ## build the course book (HTML) into book/_build/html
	$(PYTHON) tools/build_book.py

bench:  ## run the speed benchmarks (figures go to benchmarks/README.md by hand)
	$(PYTHON) benchmarks/run_all.py

PART ?= 1A
check:  ## run one part's graded tests, as a notebook's check cell does: make check PART=1A
	PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 $(PYTHON) -P tests/grading/local.py --grade-part=$(PART) \
		--grade-no-hidden --grade-json=test-artifacts/check-$(PART).json -q || [ $$? -eq 1 ]

# grading counts points from pytest's report in a process that runs none of the lab code
# (tests/grading/local.py), as the autograder does
grade:  ## grade both labs: points table per part and results.json (Gradescope format)
	$(PYTHON) -P tests/grading/local.py

grade-lab01:  ## grade Lab 01 only (test-artifacts/results-lab01.json)
	$(PYTHON) -P tests/grading/local.py --grade-part=1 --grade-json=test-artifacts/results-lab01.json

grade-lab02:  ## grade Lab 02 only (test-artifacts/results-lab02.json)
	$(PYTHON) -P tests/grading/local.py --grade-part=2 --grade-json=test-artifacts/results-lab02.json

student-edition:  ## write the student edition (solutions removed, hidden tests left out) to student-edition/
	rm -rf student-edition && $(PYTHON) tools/make_student_edition.py student-edition

AUTOGRADER ?= dist/autograder.zip
autograder:  ## build the Gradescope autograder dist/autograder.zip (student edition + hidden tests, no solutions)
	$(PYTHON) tools/make_autograder.py $(AUTOGRADER)

SUBMISSIONS ?= submissions
grade-submissions:  ## grade every .zip/folder in $(SUBMISSIONS)/ with the autograder into gradebook.csv
	$(PYTHON) tools/grade_submissions.py $(SUBMISSIONS) --out gradebook.csv

submission:  ## pack what a learner uploads: submission.zip (lab files + written_answers.html)
	$(PYTHON) tools/make_submission.py

clean:  ## remove build outputs
	rm -rf book/_build build dist *.egg-info test-artifacts submission.zip written_answers.html
