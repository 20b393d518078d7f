# Attention, Step by Step: set-up, lab, tests, notebooks, benchmarks.
# Everything lives in .venv; nothing is registered globally.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
GRADE_VENV  := .venv-grade
GRADE_STAMP := $(GRADE_VENV)/.installed
PRESENT_VENV  := .venv-present
PRESENT_STAMP := $(PRESENT_VENV)/.installed

# Each target installs the extras it needs (pyproject.toml) into .venv, once:
# the runtime alone is numpy, matplotlib, ipywidgets, pillow and ipykernel.
#   lab      JupyterLab                      (make lab)
#   publish  nbformat, nbclient, nbconvert   (make notebooks, slides, site)
#   test     pytest, nbval, ... + lab, publish (make test)
#   bench    threadpoolctl                   (make bench)
STAMP  := $(VENV)/.installed-test
# One BLAS thread for the notebooks and the tests: their matrices are small,
# and on a shared 2-core machine a second BLAS thread that spins while the
# other core is busy makes small calls much slower (see benchmarks/README.md).
# The benchmarks choose their thread counts themselves.
THREADS := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

.PHONY: help setup notebook-filter web lab test student-repo test-floors mutation notebooks navigation slides site bench induction-model clean grade-venv nbgrader classroom-test present present-venv release

help:
	@echo "make lab        set up .venv and open JupyterLab on notebooks/00-index.ipynb"
	@echo "make test       set up .venv and run the whole suite"
	@echo "make notebook-filter  the git clean filter for notebooks in this clone (make lab/setup/test run it)"
	@echo "make test-floors  every dependency at its declared floor, oldest Python allowed (build/floors/)"
	@echo "make slides     reveal.js decks of the walkthroughs into build/slides/ (offline)"
	@echo "make site       the course as a book (Sphinx) into build/site/, offline; SOLUTIONS=1 adds solutions"
	@echo "make notebooks  regenerate navigation, re-execute every notebook, regenerate student notebooks"
	@echo "make navigation rewrite every generated link from pyproject.toml's [project.urls] Source (no re-execution)"
	@echo "make mutation   nbval with a softmax 1 % wrong: every notebook must fail"
	@echo "make bench      run the benchmarks (a few minutes)"
	@echo "make induction-model  retrain the stored induction-head model (helpers/data/induction_model.npz)"
	@echo "make grade-venv nbgrader in its own .venv-grade (the grading tests use it)"
	@echo "make nbgrader   export the exercises as an nbgrader course source into build/nbgrader/"
	@echo "make student-repo  the public student repository (no instructor material) into build/student-repo/"
	@echo "make classroom-test  a JupyterHub class on loopback: release, five students fetch and submit, grade, feedback"
	@echo "make present    JupyterLab with RISE on the index; PRESENT=notebooks/07-explorer.ipynb opens that deck live"
	@echo "make release    bump the version (PART=minor, or patch, major), date CHANGELOG.md, build dist/, commit, tag"
	@echo "make clean      remove .venv and build output"

setup: $(STAMP) notebook-filter

# The clean filter .gitattributes names for *.ipynb (tools/clean_notebook.py, standard library
# only): what a JupyterLab save adds never shows in git status. Configured in this clone only;
# outside a git clone there is nothing to do.
notebook-filter:
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
	  git config filter.notebook.clean "python3 tools/clean_notebook.py"; \
	  git config filter.notebook.required false; \
	fi

# Installs go through uv, installed from PyPI into the venv itself (nothing lands outside
# the folder): about 8 s for the lab where pip takes about a minute. Where uv cannot be had,
# plain pip does the same install. $(call INSTALL,VENV-DIR,ARGS) installs ARGS into VENV-DIR.
define INSTALL
	if $(1)/bin/python -m uv --version >/dev/null 2>&1 || $(1)/bin/python -m pip install --quiet --disable-pip-version-check uv; then \
	  $(1)/bin/python -m uv pip install --quiet --python $(1)/bin/python $(2); \
	else \
	  echo "uv is not available: installing with pip (slower)"; \
	  $(1)/bin/python -m pip install --quiet --disable-pip-version-check $(2); \
	fi
endef

# A venv for DIR, made once, on Python 3.11 or newer.
define MAKE_VENV
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "Python 3.11 or newer is needed; found: $$($(PYTHON) --version)"; exit 1; }
	test -x $(1)/bin/python || $(PYTHON) -m venv $(1)
endef

$(BIN)/python:
	$(call MAKE_VENV,$(VENV))

$(VENV)/.installed-%: pyproject.toml | $(BIN)/python
	@$(call INSTALL,$(VENV),-e ".[$*]")
	touch $@

# The front-end files of the slides and the site (reveal.js, RequireJS, MathJax,
# ipywidgets' HTML manager): npm package tarballs pinned by hash in
# web/packages.json, unpacked into build/vendor/ once, at set-up time.
VENDOR := build/vendor/.packages.json

web: $(VENDOR)

$(VENDOR): web/packages.json tools/web_assets.py | $(BIN)/python
	$(BIN)/python tools/web_assets.py

# Jupyter refuses to run as root unless told; containers often run as root.
ALLOW_ROOT := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

# The repository root is the server's root, so the file browser shows exercises/ and docs/
# and the index's links to them open (a notebook's path alone would make its folder the
# root); the index opens first. JUPYTER_ARGS adds options, e.g. JUPYTER_ARGS=--no-browser.
# tests/test_browser.py starts the lab from this very command line (`make -n lab`).
INDEX := notebooks/00-index.ipynb
SERVE_ROOT := --ServerApp.root_dir="$(CURDIR)"
# Saves go through tools/clean_notebook.py (tools/jupyter_server_config.py): opening, running and
# saving a lesson leaves git status clean.
LAB_CONFIG := --config="$(CURDIR)/tools/jupyter_server_config.py"
JUPYTER_ARGS ?=

lab: $(VENV)/.installed-lab notebook-filter
	$(THREADS) $(BIN)/jupyter lab $(ALLOW_ROOT) $(SERVE_ROOT) $(LAB_CONFIG) --LabApp.default_url=/lab/tree/$(INDEX) $(JUPYTER_ARGS)

# The RISE test runs in a pytest process of its own: inside the whole suite its
# presenter has failed to render the explorer's widgets (three runs of three),
# alone it has passed every time (seven runs, cold and warm .venv-present).
# Both parts always run; a failure in the first does not hide the second, and the last
# lines say how each part ended (make exits non-zero if either failed).
test: $(VENV)/.installed-test $(VENDOR) $(GRADE_STAMP) $(PRESENT_STAMP) notebook-filter
	@main=0; rise=0; \
	$(THREADS) $(BIN)/python -m pytest --ignore=tests/test_rise.py $(PYTEST_ARGS) || main=$$?; \
	$(THREADS) $(BIN)/python -m pytest tests/test_rise.py $(PYTEST_ARGS) || rise=$$?; \
	echo "make test: the suite $$( [ $$main = 0 ] && echo passed || echo "FAILED (pytest exit $$main)" )," \
	     "the RISE test $$( [ $$rise = 0 ] && echo passed || echo "FAILED (pytest exit $$rise)" )"; \
	[ $$main = 0 ] && [ $$rise = 0 ]

# Every declared floor, tested: a fresh build/floors/.venv on the oldest Python that
# requires-python allows, every requirement of pyproject.toml pinned at its floor
# (tools/floors.py writes the constraints), the suite without the browser tests.
test-floors:
	$(PYTHON) tools/floors.py run

notebooks: $(VENV)/.installed-publish
	$(BIN)/python tools/navigation.py
	$(THREADS) $(BIN)/python tools/run_notebooks.py
	$(THREADS) $(BIN)/python tools/run_notebooks.py instructor/solutions/*.ipynb
	$(BIN)/python tools/make_student_notebooks.py

# Every link to the repository (README badges, notebooks' Colab links and set-up cells,
# docs/), written from [project.urls] Source in pyproject.toml; the notebooks are not re-run.
navigation: $(VENV)/.installed-publish
	$(BIN)/python tools/navigation.py

slides: $(VENV)/.installed-publish $(VENDOR)
	$(THREADS) $(BIN)/python tools/publish.py slides
	@echo "Open build/slides/index.html in a browser (no server or network needed)."

# The student site by default; SOLUTIONS=1 adds the worked solutions (in the instructor's copy only)
site: $(VENV)/.installed-publish $(VENV)/.installed-site $(VENDOR)
	$(THREADS) $(BIN)/python tools/site/build.py $(if $(filter 1,$(SOLUTIONS)),--solutions)
	@echo "Open build/site/index.html, or serve it: $(BIN)/python -m http.server -d build/site"

# nbval against a softmax that is 1 % wrong: every notebook must fail (a few minutes)
mutation: $(VENV)/.installed-test
	$(THREADS) $(BIN)/python tools/softmax_mutation.py

bench: $(VENV)/.installed-bench
	$(BIN)/python benchmarks/bench_threads.py
	$(BIN)/python benchmarks/bench_attention.py
	$(BIN)/python benchmarks/bench_widgets.py
	$(BIN)/python benchmarks/bench_blockwise.py
	$(BIN)/python benchmarks/bench_transformer.py

# The trained weights the induction-head notebook loads (about 35 s of CPU on one thread;
# benchmarks/bench_induction_seeds.py times 8 seeds).
induction-model: $(VENV)/.installed-bench
	$(THREADS) $(BIN)/python -m helpers.transformer

# --- homework grading (issue 12): nbgrader in its own environment -------------------------
grade-venv: $(GRADE_STAMP)

$(GRADE_STAMP): pyproject.toml
	$(call MAKE_VENV,$(GRADE_VENV))
	@$(call INSTALL,$(GRADE_VENV),-e ".[grade]")
	touch $(GRADE_STAMP)

# The public repository students get: this one without instructor/, the grading tools and the
# tests that read them (tools/make_student_repo.py; docs/teaching.md, "Which files go where").
student-repo:
	$(PYTHON) tools/make_student_repo.py

nbgrader: $(VENV)/.installed-publish
	$(BIN)/python tools/make_nbgrader_course.py
	@echo "Then: cd build/nbgrader && $(CURDIR)/$(GRADE_VENV)/bin/nbgrader generate_assignment E6-backward"

# --- a class on JupyterHub: docs/classroom.md run as a script -----------------------------
# tests/test_classroom.py runs the page's plain-JupyterHub recipe block by block, as root:
# it makes the hub's environment (uv, from the cache this venv's installs warmed), the npm
# proxy and real Unix users (a grader, a lecturer, five students; removed at the end), then
# the whole nbgrader loop on 127.0.0.1; -s shows the time of each step.
classroom-test: $(VENV)/.installed-test
	$(THREADS) ATTENTION_CLASSROOM=1 $(BIN)/python -m pytest -s tests/test_classroom.py

# --- live lecture mode (issue 12): RISE slides inside JupyterLab, with a live kernel ------
# In its own .venv-present: RISE's presenter bundles an older JupyterLab core, and only
# older ipywidgets front ends load in it (tools/rise/constraints.txt says why). The
# shortcut overrides give the arrow keys to a focused slider instead of the notebook's
# cell navigation (the presenter handles keys before the widgets do).
# Without PRESENT: JupyterLab on the index, each notebook with RISE's slideshow button.
# With PRESENT=notebooks/NN-x.ipynb: that notebook opened straight in the presenter.
PRESENT ?=
PRESENT_URL = $(if $(PRESENT),/rise/$(PRESENT),/lab/tree/$(INDEX))

present-venv: $(PRESENT_STAMP)

# Its kernels run their notebook's set-up cells as they start (tools/rise/present_setup.py), so the
# first Shift+Enter on any slide works; the overrides also turn autosave off: presenting never
# writes to the notebook in the repository; tools/rise/patch_presenter.py keeps the arrow keys of a
# focused slider from moving the deck.
$(PRESENT_STAMP): pyproject.toml tools/rise/constraints.txt tools/rise/overrides.json tools/rise/present_setup.py \
                  tools/rise/patch_presenter.py
	$(call MAKE_VENV,$(PRESENT_VENV))
	@$(call INSTALL,$(PRESENT_VENV),-e ".[present]" -c tools/rise/constraints.txt)
	mkdir -p $(PRESENT_VENV)/share/jupyter/lab/settings $(PRESENT_VENV)/etc/ipython
	cp tools/rise/overrides.json $(PRESENT_VENV)/share/jupyter/lab/settings/overrides.json
	echo 'c.InteractiveShellApp.exec_files = ["$(CURDIR)/tools/rise/present_setup.py"]' \
	  > $(PRESENT_VENV)/etc/ipython/ipython_kernel_config.py
	$(PRESENT_VENV)/bin/python tools/rise/patch_presenter.py
	touch $(PRESENT_STAMP)

present: $(PRESENT_STAMP)
	$(THREADS) $(PRESENT_VENV)/bin/jupyter lab $(ALLOW_ROOT) $(SERVE_ROOT) --LabApp.default_url=$(PRESENT_URL) $(JUPYTER_ARGS)

# --- releases: tools/release.py refuses while Source in pyproject.toml is the placeholder, the
# working tree is dirty or CHANGELOG.md's [Unreleased] is empty; then bump-my-version
# ([tool.bumpversion] in pyproject.toml) bumps helpers.__version__, dates [Unreleased] into the new
# version's section, updates CITATION.cff, builds dist/ (uv build), commits and tags vX.Y.Z (no push).
PART ?= minor

release: $(VENV)/.installed-publish $(VENV)/.installed-release
	$(BIN)/python tools/release.py $(PART)

clean:
	rm -rf $(VENV) $(GRADE_VENV) $(PRESENT_VENV) build dist test-artifacts *.egg-info
