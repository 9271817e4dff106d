# Makefile - build, test, demo and benchmark hg-backgroundclose
#
# Every target installs what it needs: a virtualenv in .venv with Mercurial,
# pytest, cram and hypothesis, the extension itself (editable), and the
# close-latency shim bench/slowclose.so.

PYTHON ?= python3
HG_VERSION ?= 7.2.4
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-hg-$(HG_VERSION)
SHIM := build/slowclose.so
CRAM_ARGS ?=
PYTEST_ARGS ?=

.PHONY: all test unit cram demo shim venv clean

all: test

venv: $(STAMP)

$(STAMP): setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "mercurial==$(HG_VERSION)" pytest cram hypothesis
	$(BIN)/pip install --quiet -e .
	touch $@

shim: $(SHIM)

$(SHIM): bench/slowclose.c
	mkdir -p build
	$(CC) -O2 -Wall -Wextra -shared -fPIC -o $@ $< -ldl

test: unit cram

unit: $(STAMP)
	$(BIN)/python -m pytest -q tests $(PYTEST_ARGS)

cram: $(STAMP) $(SHIM)
	PATH="$(abspath $(BIN)):$$PATH" SLOWCLOSE_SO="$(abspath $(SHIM))" \
		$(BIN)/cram --shell=/bin/bash $(CRAM_ARGS) tests

demo: $(STAMP) $(SHIM)
	$(BIN)/python bench/demo.py --hg $(BIN)/hg --shim $(SHIM)

clean:
	rm -rf $(VENV) build *.egg-info tests/*.t.err
