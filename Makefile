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

# Browser files the built pages load, fetched from the npm registry (`npm pack`, exact versions)
# into the gitignored _vendor/ and served from the site itself (_config.yml: html_static_path,
# mathjax_path, nb_ipywidgets_js, mermaid_use_local). Nothing is loaded from a CDN.
MATHJAX_VERSION      := 3.2.2
REQUIREJS_VERSION    := 2.3.7
HTML_MANAGER_VERSION := 1.0.15
MERMAID_VERSION      := 11.12.1
ANYWIDGET_VERSION    := 0.11.0
VENDOR      := _vendor
VENDOR_SITE := $(VENDOR)/site
# Set to 1 once the chapters embed the labs: the browser test then fails if one of the six labs
# (clock, frequency, kernel, attention, scaling, wiring, audit) is embedded in no page.
REQUIRE_LAB ?= 1
# The built site that test-site checks.
SITE ?= _build/html
VENDOR_STAMP := $(VENDOR)/.stamp-$(MATHJAX_VERSION)-$(REQUIREJS_VERSION)-$(HTML_MANAGER_VERSION)-$(MERMAID_VERSION)-$(ANYWIDGET_VERSION)


.PHONY: install browser vendor book test test-package test-notebooks test-book test-site notebooks assignments bench clean help test-torch test-grading

help:
	@echo "make book       install, execute every notebook, build the HTML book into _build/html"
	@echo "make test       install, then package tests, nbval over every notebook, book build (-W)"
	@echo "make notebooks  re-execute every chapter notebook in place (refresh stored outputs)"
	@echo "make assignments  student and instructor editions (+ zips), an nbgrader course and Otter-Grader assignments into _build/assignments, checked"
	@echo "make vendor     fetch MathJax, require.js, the widget html-manager, anywidget and mermaid (npm) into _vendor/"
	@echo "make test-site  open every page of _build/html in headless Chromium (after a book build)"
	@echo "make bench      run the benchmarks in bench/"
	@echo "make test-torch Gate A on the rotary code of transformers and five other libraries (optional; torch CPU, in .venv-torch)"
	@echo "make test-grading the nbgrader and Otter-Grader editions graded end to end by the tools (optional; in .venv-grading)"
	@echo "make clean      remove build output (keeps .venv)"

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip check
	touch $(STAMP)

install: $(STAMP)

$(VENDOR_STAMP): scripts/site/widgets-offline.js
	rm -rf $(VENDOR)/npm $(VENDOR_SITE) $(VENDOR)/.stamp-*
	mkdir -p $(VENDOR)/npm $(VENDOR_SITE)/html-manager $(VENDOR_SITE)/require $(VENDOR_SITE)/anywidget $(VENDOR_SITE)/mermaid
	cd $(VENDOR)/npm && npm pack --silent mathjax@$(MATHJAX_VERSION) requirejs@$(REQUIREJS_VERSION) \
		@jupyter-widgets/html-manager@$(HTML_MANAGER_VERSION) mermaid@$(MERMAID_VERSION) \
		anywidget@$(ANYWIDGET_VERSION) > /dev/null
	cd $(VENDOR)/npm && for t in *.tgz; do mkdir -p "$${t%.tgz}" && tar xzf "$$t" -C "$${t%.tgz}" --strip-components=1; done
	cp -r $(VENDOR)/npm/mathjax-$(MATHJAX_VERSION)/es5 $(VENDOR_SITE)/mathjax
	cp $(VENDOR)/npm/requirejs-$(REQUIREJS_VERSION)/require.js $(VENDOR_SITE)/require/
	cd $(VENDOR)/npm/jupyter-widgets-html-manager-$(HTML_MANAGER_VERSION)/dist && \
		cp embed-amd.js *.woff2 *.woff *.ttf *.eot *.svg ../../../site/html-manager/
	cp $(VENDOR)/npm/anywidget-$(ANYWIDGET_VERSION)/dist/index.js $(VENDOR_SITE)/anywidget/
	cp $(VENDOR)/npm/mermaid-$(MERMAID_VERSION)/dist/mermaid.esm.min.mjs $(VENDOR_SITE)/mermaid/
	mkdir -p $(VENDOR_SITE)/mermaid/chunks
	cp -r $(VENDOR)/npm/mermaid-$(MERMAID_VERSION)/dist/chunks/mermaid.esm.min $(VENDOR_SITE)/mermaid/chunks/
	cp scripts/site/widgets-offline.js $(VENDOR_SITE)/
	touch $@

vendor: $(VENDOR_STAMP)

book: install vendor
	$(JB) build -W -n --keep-going .
	@echo "The book is in _build/html. Read it served, not opened as a file (browsers refuse the diagrams'"
	@echo "JavaScript modules from file://):  $(PYTHON) -m http.server -d _build/html 8000  then open http://127.0.0.1:8000/"

# Each stage in order, its wall and CPU time printed after it (the 10-minute budget on 2 cores: CONTRIBUTING.md).
TEST_STAGES := test-package test-notebooks test-book test-site assignments
test: install
	@for stage in $(TEST_STAGES); do \
		$(BIN)/python scripts/timed.py "make $$stage" $(MAKE) --no-print-directory $$stage || exit 1; done

# Both run on every core (pytest-xdist); each notebook's cells stay in order in one kernel (loadfile).
# loadgroup: a file whose module fixtures serve several tests stays on one worker (tests/conftest.py).
# The files that test-site and assignments run whole are not run here a second time.
LATER_STAGE_TESTS := tests/test_site.py tests/test_kernel_lab.py tests/test_labs_browser.py tests/test_assignments.py
test-package: install
	$(BIN)/python -m pytest -q -p no:cacheprovider -n auto --dist loadgroup $(addprefix --ignore=,$(LATER_STAGE_TESTS)) tests

test-notebooks: install
	@test -n "$(NOTEBOOKS)" || { echo "no notebooks in chapters/"; exit 1; }
	$(BIN)/python -m pytest -q -p no:cacheprovider -n auto --dist loadfile --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg -p tests.nbval_numbers $(NOTEBOOKS)

# The test build renders the outputs stored in the notebooks, which test-notebooks (nbval) has just shown
# to be what the code computes: each notebook is executed once per `make test`. `make book` executes.
# (The config is written beside _config.yml: Jupyter Book resolves its local paths from the config's folder.)
TEST_CONFIG := .config-test.yml
test-book: install vendor
	rm -rf _build/html _build/.doctrees _build/jupyter_execute
	sed 's/^  execute_notebooks: force$$/  execute_notebooks: "off"/' _config.yml > $(TEST_CONFIG)
	grep -q '^  execute_notebooks: "off"$$' $(TEST_CONFIG) || { echo "test-book: _config.yml has no 'execute_notebooks: force' line to turn off" >&2; exit 1; }
	$(JB) build -W -n --keep-going --config $(TEST_CONFIG) .

# Serves _build/html on loopback and opens every page in headless Chromium (needs test-book first),
# driving every embedded lab; also renders every lab from embedded state in a static page, drives
# its controls and checks its numbers against ropegeo (no kernel, outside requests blocked).
test-site: install browser
	ROPEGEO_SITE=$(SITE) ROPEGEO_REQUIRE_SITE=1 ROPEGEO_REQUIRE_LAB=$(REQUIRE_LAB) $(BIN)/python -m pytest -q -p no:cacheprovider -n auto --dist loadgroup \
		tests/test_site.py tests/test_kernel_lab.py tests/test_labs_browser.py

# Debian's Chromium for the browser test: installed with apt when missing (as root), so that
# `make test` on a fresh machine needs no other step.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing Debian's chromium for the browser test"; \
			DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
		else \
			echo "the browser test needs Chromium at /usr/bin/chromium: install Debian's 'chromium' package" >&2; exit 1; \
		fi; }
	@echo "browser: $$(command -v chromium)"

notebooks: install
	$(BIN)/python scripts/execute_notebooks.py $(NOTEBOOKS)

assignments: install
	rm -rf _build/assignments
	$(BIN)/python scripts/make_assignments.py --out _build/assignments $(NOTEBOOKS)
	ROPEGEO_RUN_STUDENT_EDITIONS=1 $(BIN)/python -m pytest -q -p no:cacheprovider -n auto --dist loadgroup tests/test_assignments.py

# Optional, not part of `make test`: Gate A on transformers' own rotary code (Llama, GPT-NeoX, GPT-J,
# Mistral, Qwen2, Phi-3, Gemma 3, DeepSeek-V3, GPT-OSS) and of other libraries (rotary-embedding-torch,
# x-transformers, torchtune, Meta's llama-models, mistral-inference) in float32, bfloat16 and float16, from
# tests/with_torch. torch never goes into requirements.txt (Binder stays light). The CPU wheel index is
# asked for torch only; `make test-torch TORCH_INDEX=` skips it (a local wheel through pip's find-links).
TORCH_VENV         := .venv-torch
TORCH_VERSION      := 2.13.0
TRANSFORMERS_VERSION := 5.24.0
TORCH_INDEX        ?= https://download.pytorch.org/whl/cpu
# Rotary code of other libraries (tests/with_torch/test_other_rotary.py), each pinned to a version
# verified with this torch on CPU. torchao 0.11 is the last that torchtune 0.6.1 imports (later ones
# moved nf4tensor); fairscale is what llama-models' reference model imports. mistral-inference goes
# in without its dependencies: they pull xformers (CUDA kernels) and another numpy, and its rope.py
# needs torch only. litgpt is left out: it pins huggingface-hub<1.4, transformers 5.24 needs >=1.31.
TORCH_ROPE_LIBS    := rotary-embedding-torch==0.9.1 einops==0.8.2 x-transformers==2.31.10 torchtune==0.6.1 \
                      torchao==0.11.0 llama-models==0.3.0 fairscale==0.4.13
TORCH_ROPE_NODEPS  := mistral-inference==1.6.0
TORCH_STAMP        := $(TORCH_VENV)/.installed-stamp-$(TORCH_VERSION)-$(TRANSFORMERS_VERSION)-rope-libs-1

$(TORCH_STAMP): requirements.txt pyproject.toml
	test -x $(TORCH_VENV)/bin/python || $(PYTHON) -m venv $(TORCH_VENV)
	$(TORCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(TORCH_VENV)/bin/python -m pip install --quiet -r requirements.txt
	$(TORCH_VENV)/bin/python -m pip install --quiet torch==$(TORCH_VERSION) $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))
	$(TORCH_VENV)/bin/python -m pip install --quiet transformers==$(TRANSFORMERS_VERSION)
	$(TORCH_VENV)/bin/python -m pip install --quiet torch==$(TORCH_VERSION) transformers==$(TRANSFORMERS_VERSION) $(TORCH_ROPE_LIBS)
	$(TORCH_VENV)/bin/python -m pip install --quiet --no-deps $(TORCH_ROPE_NODEPS)
	touch $(TORCH_STAMP)

test-torch: $(TORCH_STAMP)
	$(TORCH_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/with_torch

# Optional, not part of `make test`: the course editions graded end to end by nbgrader and Otter-Grader
# themselves (tests/with_grading: generate/assign, then autograde/`otter run` without Docker, on the
# solutions, the stubs and one known wrong answer). Their own .venv-grading: the book's pins plus the two
# tools, verified to install together with them (pip check clean) at these versions.
# `ROPEGEO_GRADING_CHAPTERS=ch01 make test-grading` grades one chapter only.
GRADING_VENV     := .venv-grading
NBGRADER_VERSION := 0.9.6
OTTER_VERSION    := 7.0.0
GRADING_STAMP    := $(GRADING_VENV)/.installed-stamp-$(NBGRADER_VERSION)-$(OTTER_VERSION)

$(GRADING_STAMP): requirements.txt pyproject.toml
	test -x $(GRADING_VENV)/bin/python || $(PYTHON) -m venv $(GRADING_VENV)
	$(GRADING_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(GRADING_VENV)/bin/python -m pip install --quiet -r requirements.txt nbgrader==$(NBGRADER_VERSION) \
		otter-grader==$(OTTER_VERSION)
	$(GRADING_VENV)/bin/python -m pip check
	touch $(GRADING_STAMP)

test-grading: $(GRADING_STAMP)
	$(GRADING_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/with_grading

bench: install
	@for f in $$(ls bench/*.py | grep -v "/_"); do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf _build .pytest_cache .hypothesis
