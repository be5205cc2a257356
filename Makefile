# The course's entry points. The first `make` creates .venv and installs into it.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
JOBS   ?= 2
# JupyterHub's proxy, where `make proxy` installs it
NODE_BIN := $(VENV)/node/node_modules/.bin
export PATH := $(CURDIR)/$(VENV)/bin:$(CURDIR)/$(NODE_BIN):$(PATH)

.PHONY: demo test bench install proxy chromium exercises release autograde cluster-certs feedback grades heldout similarity extend dynet-gpu clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[grader,hub,book,test]"
	@rm -f $(VENV)/.installed-*
	@touch $@

## make demo: the main job: train a small LSTM language model on the course corpus,
## then the instructor's flow on a small class (a correct, a wrong and a cheating
## submission): release, autograde into nbgrader's gradebook, feedback, grade table
DEMO_CLASS := correct,wrong_gate_order,probe_patched
demo: $(STAMP)
	$(PY) -m course train --epochs 2 --out runs/demo --overwrite    # defaults: course.settings.Settings
	$(PY) -m autograder.grade release
	$(PY) -m autograder.grade autograde autograder/samples/submissions --students $(DEMO_CLASS) \
	    --workers $(WORKERS) --course runs/demo-course
	$(PY) -m autograder.grade feedback --course runs/demo-course
	$(PY) -m autograder.grade grades --course runs/demo-course

## what the browser tests and the hub need beside Python, installed when missing: JupyterHub's
## proxy (into .venv/node; no root needed) and Debian's chromium (apt-get, as root)
proxy: $(STAMP)
	@command -v configurable-http-proxy > /dev/null || { command -v npm > /dev/null && \
	    npm install --silent --prefix $(VENV)/node configurable-http-proxy@5.3.0; } || \
	    { echo "make: JupyterHub's proxy is missing and npm could not install it: install Node.js 20 (npm), then run make again" >&2; exit 2; }

chromium:
	@command -v chromium > /dev/null || { test "$$(id -u)" = 0 && command -v apt-get > /dev/null && \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium > /dev/null; } || \
	    { echo "make: the browser tests need Debian's chromium: run 'sudo apt-get install chromium', then make again" >&2; exit 2; }

## make test: the whole test suite (both cores: DyNet uses one per process)
test: $(STAMP) proxy chromium
	$(PY) -m pytest -n $(JOBS) --dist loadgroup

## make exercises: regenerate exercises/ from solutions/ with nbgrader
exercises: $(STAMP)
	$(PY) -m autograder.exercises

## Instructors: student release, grading a folder of submissions, feedback, grade table
release: $(STAMP)
	$(PY) -m autograder.grade release

SUBMISSIONS ?= autograder/samples/submissions
WORKERS ?= 2
## SCHEDULER=tls://HOST:PORT grades on a Dask cluster (docs/teaching.md), over TLS with the course's
## certificates in CERTS; a plain tcp:// address is refused
SCHEDULER ?=
COLLECTED ?=
CERTS ?= autograder/work/cluster
autograde: $(STAMP)
	$(PY) -m autograder.grade autograde $(SUBMISSIONS) --workers $(WORKERS) $(if $(SCHEDULER),--scheduler $(SCHEDULER) --certs $(CERTS)) $(if $(COLLECTED),--collected $(COLLECTED))

## make cluster-certs: the course's certificate authority and the scheduler's, workers' and
## instructor's certificates for a Dask cluster, into CERTS (out of git; kept if already there)
cluster-certs: $(STAMP)
	$(PY) -m autograder.cluster certs --out $(CERTS)

feedback: $(STAMP)
	$(PY) -m autograder.grade feedback

grades: $(STAMP)
	$(PY) -m autograder.grade grades

## make extend STUDENT=s CHAPTER=05_gru UNTIL=2027-03-04T23:59:00Z: an extension, in the gradebook
extend: $(STAMP)
	$(PY) -m autograder.late_policy $(STUDENT) $(CHAPTER) $(UNTIL)

## make similarity CHAPTER=06_minibatching: pairs of students whose answer cells are alike, from the
## graded class's submitted/ (a side-by-side report for the instructor, never shown to students)
CHAPTER ?= 06_minibatching
similarity: $(STAMP)
	$(PY) -m autograder.similarity $(CHAPTER) --submissions autograder/work/course/submitted

## make heldout: the capstone's held-out sentences, from a seed only the instructors hold
## (autograder/heldout/seed, made the first time; delete it for a new held-out set)
heldout: $(STAMP)
	$(PY) -m autograder.make_heldout --out autograder/heldout

## make bench: the benchmark tables in bench/results/ (bench/capstone_budget.py alone takes about 20 minutes;
## the converged runs of converge.py take a night and resume, so make bench only rebuilds their tables;
## bench/samples.py trains its five converged runs again into runs/converge-samples/ the first time, about 36 minutes)
bench: $(STAMP)
	$(PY) bench/batch_speed.py
	$(PY) bench/cell_speed.py
	$(PY) bench/lm_memory.py
	$(PY) bench/samples.py
	$(PY) bench/notebook_times.py
	$(PY) bench/grading_speed.py
	$(PY) bench/dynet_start.py
	$(PY) bench/sample_speed.py
	$(PY) bench/capstone_budget.py --again
	$(PY) bench/converge_tables.py
	$(PY) bench/engine_speed.py --repeats 3
	$(PY) bench/tbptt.py
	$(PY) bench/attention_cost.py
	$(PY) bench/attention_compare.py
	$(PY) bench/hub_load.py
	$(PY) bench/platforms.py

## make hub: the course on a JupyterHub on this machine (as root; docs/teaching.md). ROSTER lists
## the accounts (hub/roster.example); HUB_ROOT is where the hub keeps everything; it listens on
## HUB_IP:HUB_PORT (loopback unless told: for a class, HUB_IP=0.0.0.0 behind TLS).
.PHONY: hub
ROSTER   ?= hub/roster.example
HUB_ROOT ?= /srv/rnnlm-course
HUB_IP   ?= 127.0.0.1
HUB_PORT ?= 8000
hub: $(STAMP) proxy
	$(PY) -m hub.prepare --roster $(ROSTER) --root $(HUB_ROOT)
	COURSE_HUB_ROOT=$(HUB_ROOT) COURSE_HUB_IP=$(HUB_IP) COURSE_HUB_PORT=$(HUB_PORT) \
	    $(VENV)/bin/jupyterhub -f hub/jupyterhub_config.py

## make book: the self-study book, lectures executed (outputs cached), in _build/html/
.PHONY: book
book: $(STAMP)
	$(PY) -m book.build

## make dynet-gpu: build a CUDA-enabled DyNet into .venv-gpu (see README, "GPU DyNet")
dynet-gpu:
	bash gpu/build.sh

clean:
	rm -rf runs release autograder/work _build .pytest_cache
