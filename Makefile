# Build and test the MicroDuck-on-ROCm book.
#
#   make book     build the drive page's JavaScript (npm ci, lock file), execute every chapter
#                 (cached) and build _build/html strictly
#   make test     unit tests + book structure + headless-browser checks (builds the book if stale)
#   make results  regenerate run records under logs/ (beside the published book/results/)
#   make chapter-times  measure every chapter's ci execution time into book/results/
#   make ci-times  time a cold `bash .ci/run` in a fresh clone, stage by stage, into book/results/
#
# VENV=<dir> uses another environment, e.g. the ROCm one made by
# codes/practices/amd/microduck-rl/scripts/setup_rocm.sh; only the default .venv is
# populated from requirements.txt, any other just gets the book toolchain added.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
# A recipe that fails must not leave a target that looks up to date (e.g. a half-built book).
.DELETE_ON_ERROR:

PYTHON ?= python3.11
VENV ?= .venv
PKG_DIR := codes/practices/amd/microduck-rl
VENV_ABS := $(abspath $(VENV))
VENV_STAMP := $(VENV)/.microduck-installed
MANAGED_VENV := $(if $(filter .venv ./.venv,$(VENV)),1,)

# Debian packages: headless Chromium + its driver for the browser tests, EGL/OSMesa and the
# Mesa DRI drivers for off-screen MuJoCo rendering on a machine without a GPU, Node.js for the
# drive page's build (npm too, checked as a command: NodeSource's nodejs package carries it).
SYSTEM_PACKAGES := chromium chromium-driver libegl1 libgl1 libegl-mesa0 libgl1-mesa-dri libosmesa6 shellcheck nodejs

BOOK_INDEX := _build/html/index.html
# The drive page (book/drive/): its JavaScript bundled by npm from the lock file into
# book/_extra/drive/ (copied to _build/html/drive/), beside the export of the book's checkpoint.
DRIVE_SRC := book/drive
DRIVE_OUT := book/_extra/drive
DRIVE_MODULES := $(DRIVE_SRC)/node_modules/.package-lock.json
BOOK_SOURCES := _config.yml _toc.yml $(wildcard book/*.md book/_extra/*) $(wildcard notebooks/*.md) \
	$(DRIVE_SRC)/index.html $(DRIVE_SRC)/build.mjs $(DRIVE_SRC)/package-lock.json $(wildcard $(DRIVE_SRC)/src/*.js) \
	$(shell find book/results $(PKG_DIR)/src -type f \( -name '*.py' -o -name '*.json' \
	-o -name '*.csv' -o -name '*.pt' -o -name '*.mp4' -o -name '*.md' \) 2>/dev/null)

# Run tools from the chosen environment: its bin/ first on PATH so the notebook kernel
# ("python3", resolved by jupyter_client) is this environment's Python, and no tracker
# tries to reach the network; long loops print a few milestone lines (a built page cannot
# redraw a progress bar).
# MICRODUCK_REPLAY_MEMO: a video-less replay the chapters computed is served to the tests that
# make the identical replay (mjlab_microduck.jobs.replay_memo), and the tests' own trainings and
# fresh-process commands are kept there for the next run of the suite (tests/suite_memo.py,
# keyed by their inputs and the package's files); it goes with the execution cache.
REPLAY_MEMO := _build/.replay_memo
RUN := env PATH="$(VENV_ABS)/bin:$$PATH" WANDB_MODE="$${WANDB_MODE:-offline}" \
	MJLAB_WARP_QUIET="$${MJLAB_WARP_QUIET:-1}" MICRODUCK_PROGRESS="$${MICRODUCK_PROGRESS:-milestones}" \
	MICRODUCK_REPLAY_MEMO="$${MICRODUCK_REPLAY_MEMO-$(abspath $(REPLAY_MEMO))}"

# Every stage prints a line when it begins and one when it ends, with the time in epoch
# seconds ("[stage] venv begin 1764620000.12"), so that any log of a build says where its time
# went (`microduck records ci-run` reads them): venv, system-deps, execute (the chapters, run
# BOOK_JOBS at a time by `microduck execute-book`), html (`jupyter-book build`, which then
# finds every chapter in the execution cache) and test.
STAGE = echo "[stage] $(1) $(2) $$(date +%s.%N)"
BOOK_JOBS ?= 2
# pytest-xdist: PYTEST_WORKERS=2 (one per core of the CI machine) shares the test files out over
# that many processes, a file's tests kept together so that a module fixture (a training, a
# replay) runs once, and in the order tests/conftest.py gives them (the files with slow tests
# first; xdist would otherwise reorder them by their number of tests); PYTEST_WORKERS=0 runs
# them in one process.
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?= -n $(PYTEST_WORKERS) $(if $(filter 0,$(PYTEST_WORKERS)),,--dist loadfile --no-loadscope-reorder) --durations=10

.PHONY: help venv system-deps drive book test results chapter-times ci-times shown-cells clean

help:
	@echo "make book         build the book (executes chapters; cached)"
	@echo "make drive        build only the drive page (book/_extra/drive)"
	@echo "make test         run all tests (builds the book first if it is stale)"
	@echo "make results      regenerate run records under logs/"
	@echo "make chapter-times  time every chapter in the ci profile on this machine (front page)"
	@echo "make ci-times     time a cold bash .ci/run in a fresh clone, stage by stage (appendix)"
	@echo "make shown-cells  run every chapter's shown cells alone, in order, as a reader types them"
	@echo "make venv         create/update $(VENV)"
	@echo "make system-deps  install Debian packages for rendering and browser tests"
	@echo "make clean        remove _build and caches"
	@echo "options: VENV=<dir>  MICRODUCK_PROFILE=ci|full  BOOK_JOBS=2  PYTEST_WORKERS=0|2|auto"

venv: $(VENV_STAMP)

# Installs go through uv, which unpacks and byte-compiles in parallel: the whole venv stage of a
# cold CI run took 41-53 s on this project's 2-core build machine, against 103-130 s with pip.
# The uv on PATH is used, else a pinned one that the environment's pip installs into it. uv reads
# no pip configuration, so the wheel folders, indexes and constraints pip is set up with
# (pip.conf, PIP_* variables; this project's build machines keep the CPU torch wheel in such a
# folder) are passed on, and like pip it takes the best match over all indexes.
# UV_INSTALL=0 installs with pip alone.
UV_VERSION := 0.13.10
UV_INSTALL ?= 1
PIP_AS_UV_ARGS = $$($(VENV)/bin/python -m pip config list 2>/dev/null \
	| sed -nE "s/^[^.]*\.(find-links|index-url|extra-index-url|constraint)='(.*)'$$/\1 \2/p" \
	| awk '{for (i = 2; i <= NF; i++) if (!seen[$$1 " " $$i]++) printf "--%s %s ", $$1, $$i}')
# $(call INSTALL,ARGS): `pip install ARGS` into $(VENV), quietly, saying so in one line.
INSTALL = @echo "install into $(VENV): $(1)"; \
	$(if $(filter 0,$(UV_INSTALL)),$(VENV)/bin/python -m pip install -q $(1), \
	uv=$$(command -v uv || { $(VENV)/bin/python -m pip install -qq uv==$(UV_VERSION) \
	                         && echo $(VENV)/bin/uv; }) \
	&& "$$uv" pip install -q --python $(VENV)/bin/python --compile-bytecode \
	--index-strategy unsafe-best-match $(PIP_AS_UV_ARGS) $(1))

# The stamp is newer than requirements.txt and the package's pyproject once both are
# installed, so a second `make venv` does nothing.
$(VENV_STAMP): requirements.txt $(PKG_DIR)/pyproject.toml
	@$(call STAGE,venv,begin)
ifeq ($(MANAGED_VENV),1)
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(call INSTALL,-r requirements.txt)
else
	@test -x $(VENV)/bin/python || { echo "error: $(VENV)/bin/python not found; create that environment first (ROCm: $(PKG_DIR)/scripts/setup_rocm.sh)" >&2; exit 1; }
	@# Only the lines after '# book toolchain' in requirements.txt: never touch its torch/Warp.
	$(call INSTALL,$$(sed -n '/^# book toolchain/,$$p' requirements.txt | grep -v '^[[:space:]]*#' | grep -v '^[[:space:]]*$$'))
endif
	$(call INSTALL,--no-deps -e $(PKG_DIR))
	@# Installed in place, the package is byte-compiled by no installer; where
	@# PYTHONDONTWRITEBYTECODE is set (as on the CI machine) every process would compile the
	@# modules it imports again, up to a second each, in a build that starts dozens.
	$(VENV)/bin/python -m compileall -q $(PKG_DIR)/src > /dev/null
	touch $@
	@$(call STAGE,venv,end)

system-deps:
	@$(call STAGE,system-deps,begin)
	@if ! command -v dpkg-query >/dev/null; then \
	  echo "system-deps: not a Debian system; install by hand: $(SYSTEM_PACKAGES)"; exit 0; fi; \
	missing=""; \
	for p in $(SYSTEM_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if ! command -v npm >/dev/null; then missing="$$missing npm"; fi; \
	if [ -z "$$missing" ]; then echo "system-deps: all installed"; exit 0; fi; \
	sudo=""; if [ "$$(id -u)" != 0 ]; then sudo="sudo"; fi; \
	echo "system-deps: installing$$missing"; \
	$$sudo apt-get update -qq; \
	DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing
	@$(call STAGE,system-deps,end)

# myst-nb's cache is keyed on a notebook's code cells only, so a change in the package, in
# the published results the chapters read, in the pinned stack, in the profile or in the
# environment (CPU .venv vs a ROCm one) would otherwise leave outputs of another run on the
# page. The build records a hash of those inputs; when it changes, the execution cache and
# the doctrees go and every chapter runs again.
# KEEP_CACHE=1 skips that (faster, but pages may show outputs of older code).
EXECUTION_INPUTS_HASH := { echo "profile=$${MICRODUCK_PROFILE:-}"; echo "venv=$(VENV_ABS)"; \
	find $(PKG_DIR)/src book/results requirements.txt -type f \
	! -name '*.pyc' ! -path '*/__pycache__/*' ! -path '*.egg-info/*' -print0 \
	| LC_ALL=C sort -z | xargs -0 sha256sum; } | sha256sum | cut -d' ' -f1
EXECUTION_STAMP := _build/.execution-inputs

define build_book
	hash="$$($(EXECUTION_INPUTS_HASH))"; \
	if [ -z "$(KEEP_CACHE)" ] && [ -d _build/.jupyter_cache ] \
	   && { [ "$$(cat $(EXECUTION_STAMP) 2>/dev/null)" != "$$hash" ] \
	        || [ ! -d book/_extra/media ]; }; then \
	  echo "book: package, results, requirements or generated videos changed since the last" \
	       "execution; re-executing every chapter"; \
	  rm -rf _build/.jupyter_cache _build/.doctrees _build/jupyter_execute $(REPLAY_MEMO); \
	fi; \
	$(call STAGE,execute,begin); \
	$(RUN) $(VENV)/bin/microduck execute-book --jobs $(BOOK_JOBS); \
	$(call STAGE,execute,end); \
	$(call STAGE,html,begin); \
	$(RUN) $(VENV)/bin/jupyter-book build . -W -n --keep-going; \
	$(call STAGE,html,end); \
	if [ -z "$(KEEP_CACHE)" ]; then echo "$$hash" > $(EXECUTION_STAMP); fi; \
	touch $(BOOK_INDEX)
endef

# npm ci installs exactly the lock file's packages from the npm registry; --ignore-scripts
# because none of them needs an install script (esbuild finds its binary package without one).
$(DRIVE_MODULES): $(DRIVE_SRC)/package.json $(DRIVE_SRC)/package-lock.json | system-deps
	cd $(DRIVE_SRC) && npm ci --ignore-scripts --no-audit --no-fund
	touch $@

# The export the page drives (walker.json's checkpoint, else the fallback: a published export,
# or one made into logs/exports), then the bundle. Both write only files whose bytes change, so
# an unchanged page leaves book/_extra (and the book's timestamps) alone.
drive: venv $(DRIVE_MODULES)
	$(RUN) $(VENV)/bin/microduck records drive-export $(DRIVE_OUT)/export
	cd $(DRIVE_SRC) && npm run --silent build -- ../_extra/drive ../_extra/drive/export

book: venv system-deps drive
	@$(build_book)

# Built only when missing or older than a source: the browser tests need the HTML.
$(BOOK_INDEX): $(BOOK_SOURCES) $(VENV_STAMP) | system-deps drive
	@$(build_book)

test: venv system-deps $(BOOK_INDEX)
	@$(call STAGE,test,begin)
	$(RUN) $(VENV)/bin/python -m pytest tests -q $(PYTEST_ARGS)
	@$(call STAGE,test,end)

# Every recorded result, regenerated on this machine into a new folder under logs/results/
# (never over book/results/). STAGES=main,resume runs a subset; LABEL names the folder.
STAGES ?= smoke,main,resume,experiment,replay,diagnostics,bench
LABEL ?= local
results: venv system-deps
	$(RUN) $(VENV)/bin/microduck recipe --stages $(STAGES) --label $(LABEL)

# How long each chapter takes in the ci profile on this machine, for the front page's table:
# clear the execution cache, build the book in the ci profile (so every chapter executes, one
# after the other), then record each chapter's execution time from the cache as the run record
# book/results/cpu_ci_book_build (`microduck records chapter-times`, which refuses a cache
# that does not hold one fresh ci build of every chapter). Run it on the machine the times
# should describe, with nothing else running. The record changes book/results, so the next
# `make book` executes every chapter again and the front page shows the new times.
CI_TIMES_RECORD := book/results/cpu_ci_book_build
chapter-times: venv system-deps
	rm -rf _build/.jupyter_cache _build/.doctrees _build/jupyter_execute $(REPLAY_MEMO)
	@export MICRODUCK_PROFILE=ci; $(build_book)
	rm -rf $(CI_TIMES_RECORD).new
	$(RUN) $(VENV)/bin/microduck records chapter-times $(CI_TIMES_RECORD).new
	rm -rf $(CI_TIMES_RECORD)
	mv $(CI_TIMES_RECORD).new $(CI_TIMES_RECORD)

# A cold CI run timed as a new contributor meets it: `microduck records ci-run` clones this
# commit into a temporary folder, runs `bash .ci/run` there (installs, chapters, HTML, tests)
# and a second time warm (WARM=0 skips it), and records the wall time of every stage, every
# chapter and the ten slowest tests as book/results/cpu_ci_run (the appendix on tests shows it).
# Commit first: the clone is of HEAD. Run it with nothing else on the machine.
CI_RUN_RECORD := book/results/cpu_ci_run
WARM ?= 1
ci-times: venv
	rm -rf $(CI_RUN_RECORD).new $(CI_RUN_RECORD).new.partial
	$(RUN) $(VENV)/bin/microduck records ci-run $(CI_RUN_RECORD).new $(if $(filter 1,$(WARM)),--warm,)
	rm -rf $(CI_RUN_RECORD)
	mv $(CI_RUN_RECORD).new $(CI_RUN_RECORD)
	$(RUN) $(VENV)/bin/microduck records map

# What a reader meets: every chapter's shown cells alone, in order, each chapter in a fresh
# kernel (no hidden cell runs), in the ci profile unless MICRODUCK_PROFILE says otherwise; the
# execution cache is left alone.
shown-cells: venv system-deps
	$(RUN) MICRODUCK_PROFILE=$${MICRODUCK_PROFILE:-ci} $(VENV)/bin/microduck execute-book \
	  --jobs $(BOOK_JOBS) --shown-only

clean:
	rm -rf _build .pytest_cache book/_extra/media $(DRIVE_OUT)
	find . \( -name '.venv*' -o -name .git -o -name .rocm-src \) -prune -o \
	  -name __pycache__ -type d -prune -exec rm -rf {} +
