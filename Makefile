# The course's entry points. The first `make` creates .venv and installs into it.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
JOBS   ?= 2
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: demo test bench install exercises release autograde feedback grades dynet-gpu clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	@rm -f $(VENV)/.installed-*
	@touch $@

## make demo: the main job: train a small LSTM language model on the course corpus,
## then the instructor flow on the sample class (release, autograde, grade table)
demo: $(STAMP)
	$(PY) -m course train --cell lstm --corpus course --epochs 2 --batch-size 32 \
	    --embed 64 --hidden 128 --out runs/demo
	$(PY) -m autograder.grade release
	$(PY) -m autograder.grade autograde autograder/samples/submissions --workers $(WORKERS)
	$(PY) -m autograder.grade feedback
	$(PY) -m autograder.grade grades

## make test: the whole test suite (both cores: DyNet uses one per process)
test: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadgroup

## make exercises: regenerate exercises/ from solutions/ with nbgrader
exercises: $(STAMP)
	$(PY) -m autograder.exercises

## Instructors: student release, grading a folder of submissions, feedback, grade table
release: $(STAMP)
	$(PY) -m autograder.grade release

SUBMISSIONS ?= autograder/samples/submissions
WORKERS ?= 2
autograde: $(STAMP)
	$(PY) -m autograder.grade autograde $(SUBMISSIONS) --workers $(WORKERS)

feedback: $(STAMP)
	$(PY) -m autograder.grade feedback

grades: $(STAMP)
	$(PY) -m autograder.grade grades

## make bench: the benchmark tables in bench/results/ (bench/capstone_budget.py alone takes about 20 minutes;
## bench/converge.py trains for a night and resumes, so make bench only rebuilds its tables)
bench: $(STAMP)
	$(PY) bench/batch_speed.py
	$(PY) bench/cell_speed.py
	$(PY) bench/notebook_times.py
	$(PY) bench/grading_speed.py
	$(PY) bench/capstone_budget.py --again
	$(PY) bench/converge_tables.py

## make dynet-gpu: build a CUDA-enabled DyNet into .venv-gpu (see README, "GPU DyNet")
dynet-gpu:
	bash gpu/build.sh

clean:
	rm -rf runs release autograder/work .pytest_cache
