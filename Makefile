# Two commands do everything on a fresh clone:  make book   and   make test
# Every target installs into .venv first (from requirements.txt, which also installs ropegeo -e .).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
JB     := $(BIN)/jupyter-book
export PYTHONHASHSEED := 0
export PYDEVD_DISABLE_FILE_VALIDATION := 1
export OPENBLAS_NUM_THREADS := 1

NOTEBOOKS := $(sort $(wildcard chapters/*.ipynb))

.PHONY: install book test test-package test-notebooks test-book notebooks assignments bench clean help

help:
	@echo "make book       install, execute every notebook, build the HTML book into _build/html"
	@echo "make test       install, then package tests, nbval over every notebook, book build (-W)"
	@echo "make notebooks  re-execute every chapter notebook in place (refresh stored outputs)"
	@echo "make assignments  student and instructor editions into _build/assignments (+ zips), checked"
	@echo "make bench      run the benchmarks in bench/"
	@echo "make clean      remove build output (keeps .venv)"

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip check
	touch $(STAMP)

install: $(STAMP)

book: install
	$(JB) build -W -n --keep-going .
	@echo "The book is in _build/html/index.html"

test: install test-package test-notebooks test-book assignments

test-package: install
	$(BIN)/python -m pytest -q tests

test-notebooks: install
	$(BIN)/python -m pytest -q -p no:cacheprovider --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg $(NOTEBOOKS)

test-book: install
	rm -rf _build/html _build/.doctrees _build/jupyter_execute
	$(JB) build -W -n --keep-going .

notebooks: install
	$(BIN)/python scripts/execute_notebooks.py $(NOTEBOOKS)

assignments: install
	rm -rf _build/assignments
	$(BIN)/python scripts/make_assignments.py --out _build/assignments $(NOTEBOOKS)
	ROPEGEO_RUN_STUDENT_EDITIONS=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_assignments.py

bench: install
	@for f in bench/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf _build .pytest_cache .hypothesis
