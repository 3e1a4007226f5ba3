# Thin wrappers over the project's entry points. `make help` lists them.
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip

.PHONY: help quickstart setup run test book bench check grade grade-lab01 grade-lab02 student-edition autograder \
	grade-submissions submission clean

help:  ## list the targets
	@grep -E '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

quickstart: setup run book  ## first command of the README: install, run the main job, build the book

setup:  ## install the project (editable) with its book and dev extras
	$(PIP) install -e ".[book,dev]"

run:  ## the main job: compare placement policies on the embedded synthetic workload
	$(PYTHON) -m lab01_cluster_sim compare

test:  ## second command of the README: the whole test suite
	$(PYTHON) -m pytest

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
