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
CRAM_TESTS ?= tests
PYTEST_ARGS ?=
# the tests' temporary files on a tmpfs of their own where root can mount
# one (tests/onscratch.sh); TEST_TMPFS=no keeps them on the usual TMPDIR
SCRATCH := tests/onscratch.sh

# the latest release of every line the extension supports
MATRIX ?= 6.5.3 6.6.3 6.7.4 6.8.2 6.9.5 7.0.3 7.1.2 7.2.4
OLDEST := $(firstword $(MATRIX))

# a release older than minimumhgversion: the extension must step aside
UNSUPPORTED ?= 6.4.5

.PHONY: all test unit cram demo shim venv dist clean test-matrix test-oldest \
	test-long test-quick \
	test-unsupported test-python soak soak-interrupts test-upstream \
	test-upstream-oldest \
	test-upstream-ci realfs-deps \
	bench bench-all bench-policy bench-realfs bench-netfs bench-full bench-cg \
	bench-releases \
	bench-count \
	bench-count-commands

all: test

venv: $(STAMP)

# setuptools 77 or later in the virtualenv too, for what builds in-process
# with it: `make dist`, tests/test-admin.t, and `python setup.py build_ext
# --inplace` (pyproject.toml's license is an SPDX expression)
$(STAMP): pyproject.toml setup.py \
		hgext3rd/backgroundclose/engine/_closelane.c \
		hgext3rd/backgroundclose/engine/_opstat.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "mercurial==$(HG_VERSION)" pytest cram hypothesis \
		"setuptools>=77"
	$(BIN)/pip install --quiet -e .
	touch $@

shim: $(SHIM)

$(SHIM): bench/slowclose.c
	mkdir -p build
	$(CC) -O2 -Wall -Wextra -shared -fPIC -o $@ $< -ldl

# the unit tests run beside the command-line tests, whose time is mostly
# spent waiting on modelled slow closes; each prints when done.  A job the
# shell starts in the background ignores SIGINT, which some unit tests
# send: tests/withsigint.py gives it back its default.
test: $(STAMP) $(SHIM)
	@mkdir -p build; \
	$(BIN)/python tests/withsigint.py $(MAKE) --no-print-directory unit \
		> build/unit.log 2>&1 & unit=$$!; \
	$(MAKE) --no-print-directory cram; cram=$$?; \
	wait $$unit; unitrc=$$?; \
	echo "=== unit tests"; cat build/unit.log; \
	if test -s build/cram-failures.log; then \
		echo "=== failed cram tests, again"; cat build/cram-failures.log; fi; \
	test $$cram = 0 && test $$unitrc = 0

# the C parts must have been built where they can be (tests/test_closelane.py
# and tests/test_opstat.py fail instead of skipping), and the lane's tests
# load the close-latency shim.  SIGINT handled (tests/withsigint.py), as for
# the cram tests: run from a background job, as CI may, the command server
# would ignore the Ctrl-C its tests send
unit: $(STAMP) $(SHIM)
	SLOWCLOSE_SO="$(abspath $(SHIM))" BACKGROUNDCLOSE_REQUIRE_NATIVE=1 \
		$(SCRATCH) $(BIN)/python tests/withsigint.py \
		$(BIN)/python -m pytest -q --durations=10 tests $(PYTEST_ARGS)

# the long loops make test runs at a reduced count, at their full count:
# the command server's twelve rounds (over a hundred commands), 30 damaged
# bundles of each stream format, 300 sequences of the closer's model a pool
# (.ci/run runs it once)
test-long: $(STAMP) $(SHIM)
	SLOWCLOSE_SO="$(abspath $(SHIM))" BACKGROUNDCLOSE_REQUIRE_NATIVE=1 \
		CMDSERVER_ROUNDS=12 FUZZ_EXAMPLES=30 MODEL_EXAMPLES=300 \
		$(SCRATCH) $(BIN)/python tests/withsigint.py \
		$(BIN)/python -m pytest -q --durations=10 \
		tests/test_cmdserver.py::test_many_commands_in_one_server_leave_nothing_behind \
		tests/test_fuzz_streams.py \
		tests/test_closermodel.py

# the edit-test loop, at most 90 s: the unit tests but the long loops and
# the command server, beside four cram stories (a clone, the checkout, the
# settings, the help)
QUICK_CRAM ?= tests/test-clone.t tests/test-checkout-audit.t \
	tests/test-badsettings.t tests/test-help.t
test-quick: $(STAMP) $(SHIM)
	@$(MAKE) --no-print-directory test CRAM_TESTS="$(QUICK_CRAM)" \
		PYTEST_ARGS="--ignore=tests/test_cmdserver.py \
		--ignore=tests/test_fuzz_streams.py \
		--ignore=tests/test_closermodel.py \
		--ignore=tests/test_upstreamrun.py"

# three at a time: most cram tests wait on modelled slow closes and sleeps.
# Tests that interrupt hg need SIGINT handled, even when make runs as a
# background job (tests/withsigint.py).  They start longest first, by the
# times of tests/cram-times.txt (after a full run, build/cram-times.txt
# holds this machine's: copy it there when the suite changes much)
CRAM_JOBS ?= 3

cram: $(STAMP) $(SHIM)
	PATH="$(abspath $(BIN)):$$PATH" SLOWCLOSE_SO="$(abspath $(SHIM))" \
		$(SCRATCH) $(BIN)/python tests/withsigint.py \
		$(BIN)/python tests/cramjobs.py --jobs $(CRAM_JOBS) \
		--failures build/cram-failures.log \
		--times tests/cram-times.txt --record build/cram-times.txt -- \
		$(BIN)/cram --shell=/bin/bash $(CRAM_ARGS) $(CRAM_TESTS)

# the whole suite against one release, in its own virtualenv
test-%:
	$(MAKE) test HG_VERSION=$* VENV=build/venv-$*

test-oldest: test-$(OLDEST)

test-unsupported:
	$(MAKE) cram HG_VERSION=$(UNSUPPORTED) VENV=build/venv-$(UNSUPPORTED) \
		CRAM_TESTS=tests/test-unsupported.t

# every supported release, one after the other (releases without a wheel
# for this Python build from source, about 40 s each)
test-matrix:
	@failed=""; for v in $(MATRIX); do \
		echo "=== Mercurial $$v"; \
		$(MAKE) --no-print-directory test HG_VERSION=$$v VENV=build/venv-$$v \
			|| failed="$$failed $$v"; \
	done; \
	if [ -n "$$failed" ]; then echo "FAILED:$$failed"; exit 1; fi; \
	echo "all passed: $(MATRIX)"

# the whole suite on the oldest Python Mercurial 7.2 runs on with the oldest
# release, and on the newest Python with the newest release, each in its own
# virtualenv from pyenv's builds.  With make test (the default Python, the
# newest release) that runs both ends of the supported releases and of the
# Python versions in three runs of the suite instead of four (make
# test-oldest and make test-matrix run the releases on the default Python).
# A Python that pyenv does not have is said, and its release runs on the
# default Python instead, unless make test runs that release already.
NEWEST := $(lastword $(MATRIX))
PYTHON_RELEASES ?= 3.9:$(OLDEST) 3.13:$(NEWEST)
PYENV_VERSIONS := $(shell pyenv root 2>/dev/null || echo $(HOME)/.pyenv)/versions
test-python:
	@for pair in $(PYTHON_RELEASES); do \
		v=$${pair%%:*}; hg=$${pair#*:}; \
		py=$$(ls -d $(PYENV_VERSIONS)/$$v.*/bin/python3 2>/dev/null \
			| sort -V | tail -1); \
		if [ -z "$$py" ] && [ "$$hg" = "$(HG_VERSION)" ]; then \
			echo "=== Python $$v: skipped, pyenv has no such build" \
				"(make test runs Mercurial $$hg)"; \
			continue; \
		elif [ -z "$$py" ]; then \
			echo "=== Python $$v: pyenv has no such build;" \
				"Mercurial $$hg on the default Python"; \
			$(MAKE) --no-print-directory test HG_VERSION=$$hg \
				VENV=build/venv-$$hg || exit 1; \
			continue; \
		fi; \
		echo "=== Python $$v ($$py), Mercurial $$hg"; \
		$(MAKE) --no-print-directory test PYTHON=$$py HG_VERSION=$$hg \
			VENV=build/venv-py$$v-$$hg || exit 1; \
	done

# Mercurial's own tests, from the source release of the Mercurial under
# test, run without the extension and then with it in each of
# UPSTREAM_CONFIGS (tests/upstream/run.py): any difference not in
# tests/upstream/allowlist.txt fails.  The whole list (142 tests of 7.2.4)
# takes over an hour per configuration on 2 cores, so CI runs
# test-upstream-ci instead: the 15 most relevant, with the extension as
# users get it (about 12 minutes), then without it only those that did not
# pass with it (run.py --core-where-needed).
UPSTREAM_LIST ?= tests/upstream/tests.txt
UPSTREAM_CONFIGS ?= ext,ext-background,ext-slow
UPSTREAM_CI_CONFIGS ?= ext
# run-tests.py --jobs: a third job keeps 2 cores busy while tests wait on
# servers and sleeps
UPSTREAM_JOBS ?= 2
UPSTREAM_ARGS ?=
UPSTREAM_SRC := build/hg-src-$(HG_VERSION)/mercurial-$(HG_VERSION)

$(UPSTREAM_SRC)/tests/run-tests.py: | $(STAMP)
	mkdir -p build/hg-src-$(HG_VERSION)
	$(BIN)/pip download --quiet --no-binary :all: --no-deps \
		-d build/hg-src-$(HG_VERSION) "mercurial==$(HG_VERSION)"
	tar -xzf build/hg-src-$(HG_VERSION)/mercurial-$(HG_VERSION).tar.gz \
		-C build/hg-src-$(HG_VERSION)
	touch $@

test-upstream: $(STAMP) $(SHIM) $(UPSTREAM_SRC)/tests/run-tests.py
	$(BIN)/python tests/upstream/run.py --hg $(BIN)/hg \
		--source $(UPSTREAM_SRC) --tests $(UPSTREAM_LIST) \
		--allowlist tests/upstream/allowlist.txt \
		--work build/upstream-$(HG_VERSION) --configs $(UPSTREAM_CONFIGS) \
		--shim $(SHIM) --jobs $(UPSTREAM_JOBS) $(UPSTREAM_ARGS)

test-upstream-oldest:
	$(MAKE) test-upstream HG_VERSION=$(OLDEST) VENV=build/venv-$(OLDEST)

test-upstream-ci:
	$(MAKE) test-upstream UPSTREAM_LIST=tests/upstream/ci-tests.txt \
		UPSTREAM_CONFIGS=$(UPSTREAM_CI_CONFIGS) \
		UPSTREAM_ARGS=--core-where-needed

# reliability soak (not part of make test, about 10 minutes): 50 applies in
# a row with random latencies, policies and injected close failures, then
# peak memory at 20,000 and 200,000 files, core against the extension; new
# random examples for the stream fuzzer, and 1,000 sequences of the
# closer's model (make test runs 40 a pool).  SOAK_SEED=N repeats a run.
SOAK_RUNS ?= 50
SOAK_SEED ?=
soak: $(STAMP) $(SHIM)
	$(BIN)/python tests/soak.py --hg $(BIN)/hg --shim $(SHIM) \
		--runs $(SOAK_RUNS) --peak-rss $(if $(SOAK_SEED),--seed $(SOAK_SEED))
	FUZZ_RANDOM=1 FUZZ_EXAMPLES=200 $(BIN)/python -m pytest -q \
		tests/test_fuzz_streams.py
	MODEL_EXAMPLES=1000 MODEL_STEPS=40 $(BIN)/python -m pytest -q \
		tests/test_closermodel.py

# Ctrl-C pressed twice, the second at a random moment, INTERRUPT_RUNS times
# over both pools and three apply paths (not part of make test, about 40 s
# a run); INTERRUPT_BUSY processes burn CPU meanwhile, as on a loaded CI
INTERRUPT_RUNS ?= 20
INTERRUPT_BUSY ?= 0
soak-interrupts: $(STAMP) $(SHIM)
	PATH="$(CURDIR)/$(BIN):$$PATH" SLOWCLOSE_SO="$(CURDIR)/$(SHIM)" \
		bash tests/soak-interrupts.sh $(INTERRUPT_RUNS) $(INTERRUPT_BUSY)

demo: $(STAMP) $(SHIM)
	$(BIN)/python bench/demo.py --hg $(BIN)/hg --shim $(SHIM)

# side-by-side benchmark: at most 10 minutes on 2 cores
bench: $(STAMP) $(SHIM)
	$(BIN)/pip install --quiet matplotlib
	$(BIN)/python bench/run.py --hg $(BIN)/hg --shim $(SHIM) --files 2000

# sshfs and openssh-server for tests/test-sshfs.t and make bench-realfs,
# and libfuse 3's headers for the case-insensitive file system of
# tests/test-caseless.t and the round-trip model of tests/test-rttfs.t,
# installed with apt-get where missing (root only);
# without them those tests are skipped, with the reason: `python3
# bench/sshfs.py --check`, `python3 bench/caseless.py --check`
realfs-deps:
	@$(PYTHON) bench/sshfs.py --install || $(PYTHON) bench/sshfs.py --check || true
	@$(PYTHON) bench/caseless.py --install || $(PYTHON) bench/caseless.py --check || true

# every operation, configuration and modelled latency at the quick size
bench-all: $(STAMP) $(SHIM)
	$(BIN)/pip install --quiet matplotlib
	$(BIN)/python bench/run.py --hg $(BIN)/hg --shim $(SHIM) --files 2000 \
		--grid all --name all

# the adaptive policy's hard cases, 20,000 files, hg clone --stream over
# ssh, medians of 3: a file system that turns slow at 25, 50 and 75% of the
# files, a heavy tail (100 us, one close in 25 of 20 ms), closes that burn
# 100, 300 and 1,000 us of CPU; about 15 minutes
bench-policy: $(STAMP) $(SHIM)
	$(BIN)/pip install --quiet matplotlib
	$(BIN)/python bench/run.py --hg $(BIN)/hg --shim $(SHIM) --name policy \
		--files 20000 --operations v2-ssh --configs core,ext-adaptive \
		--latencies 0,700,onset25,onset50,onset75,heavy,burn100,burn300,burn1000 \
		--scaling '' --no-references

# a real network file system: the stream rows, the whole clone (store and
# checkout) and the update written to an sshfs mount, served by an sshd this target starts on 127.0.0.1 (sshfs and
# openssh-server are installed with apt-get where missing); no modelled
# latency, the file system's own
bench-realfs: $(STAMP) $(SHIM)
	$(BIN)/pip install --quiet matplotlib
	$(PYTHON) bench/sshfs.py --install || { $(PYTHON) bench/sshfs.py --check; exit 1; }
	$(BIN)/python bench/run.py --hg $(BIN)/hg --shim $(SHIM) --fs sshfs \
		--files 8000 --latencies none --scaling '' --no-references \
		--operations v1-apply,v2-ssh,v3-unbundle,clone-ssh,update \
		--configs core,core-parallel,ext-adaptive,ext-inline,ext-nowriters,ext-plain \
		--name realfs
	@$(MAKE) --no-print-directory bench-netfs

# a network home directory, modelled: every request of the file system
# waits a round trip (bench/rttfs.c, FUSE), 0.2 and 1 ms, many at once;
# 2,000 files: store clone, whole clone, update from null and a pull of
# 1,000 revisions, core against the extension, with each row's
# Little's-law floor; some 25 minutes.  FUSE's headers are installed with
# apt-get where missing
bench-netfs: $(STAMP)
	$(PYTHON) bench/caseless.py --install || { $(PYTHON) bench/rttfs.py --check; exit 1; }
	$(BIN)/python bench/netfs.py --hg $(BIN)/hg --files 2000 --revisions 1000 \
		--roundtrips 200,1000 --rounds 3 --name netfs

# a mozilla-central-sized repository (about 230,000 files), with a file
# system that turns slow at 25, 50 and 75% of the files: some two and a half
# hours
bench-full: $(STAMP) $(SHIM)
	$(BIN)/pip install --quiet matplotlib
	$(BIN)/python bench/run.py --hg $(BIN)/hg --shim $(SHIM) --name full \
		--files 230000 --size-scale 8 --no-references \
		--latencies 0,700,onset25,onset50,onset75 \
		--operations v1-apply,v2-ssh --configs core,core-parallel,ext-adaptive \
		--scaling 1000,10000,100000 --tmpfs-size 14g

# changegroup application and working-copy update, 20,000 files: about 20
# minutes
bench-cg: $(STAMP) $(SHIM)
	$(BIN)/pip install --quiet matplotlib
	$(BIN)/python bench/run.py --hg $(BIN)/hg --shim $(SHIM) --name cg \
		--files 20000 --latencies 0,700 --rounds 5 \
		--operations cg-unbundle,update \
		--configs core,core-bgclose,ext-adaptive,ext-forced,ext-python \
		--scaling ''

# the seams' instructions a file above core's (callgrind; installs valgrind
# with apt-get where missing): a few minutes.  BEFORE=DIR counts a checkout
# too
bench-count: $(STAMP)
	$(BIN)/python bench/countloop.py $(if $(BEFORE),--before $(BEFORE))

# whole commands at 0 us in instructions, core against the extension, on
# run.py's 20,000-file corpus (callgrind, every process): some 25 minutes.
# BEFORE=DIR counts a checkout too; FILES=N another size
bench-count-commands: $(STAMP) $(SHIM)
	$(BIN)/python bench/countcommands.py --hg $(BIN)/hg --shim $(SHIM) \
		$(if $(FILES),--files $(FILES)) \
		$(if $(BEFORE),--before $(BEFORE)/hgext3rd/backgroundclose)

# one row per release: hg clone --stream at 0 and 700 us, core and extension
bench-releases: $(SHIM)
	@for v in $(MATRIX); do \
		$(MAKE) --no-print-directory venv HG_VERSION=$$v VENV=build/venv-$$v || exit 1; \
		build/venv-$$v/bin/python bench/run.py --hg build/venv-$$v/bin/hg \
			--shim $(SHIM) --files 3000 --name release-$$v \
			--operations v2-ssh --latencies 0,700 --configs core,ext-adaptive \
			--no-references --scaling '' || exit 1; \
	done
	$(PYTHON) bench/releases.py

# the sdist, then the wheel built from it by pip (PEP 517, in an isolated
# build environment holding only pyproject.toml's build requirements), so
# that the sdist is known to hold what building needs.  The sdist is built
# in a virtualenv of its own (build/dist-env) with only setuptools, not in
# the test virtualenv.  The wheel holds the C modules where they build
# (POSIX with a C compiler); where they do not, the build goes on without
# them, but not this target: its wheel would close on Python threads only.
# What the builds printed: build/dist.log
DIST_ENV := build/dist-env
dist:
	rm -rf dist build/dist $(DIST_ENV)
	mkdir -p dist build
	$(PYTHON) -m venv $(DIST_ENV)
	$(DIST_ENV)/bin/pip install --quiet --disable-pip-version-check \
		"setuptools>=77" > build/dist.log 2>&1 || { cat build/dist.log; exit 1; }
	$(DIST_ENV)/bin/python -c "from setuptools import build_meta as b; \
		b.build_sdist('dist')" >> build/dist.log 2>&1 \
		|| { cat build/dist.log; exit 1; }
	$(DIST_ENV)/bin/pip wheel --no-deps --disable-pip-version-check \
		--wheel-dir dist dist/hg_backgroundclose-*.tar.gz \
		>> build/dist.log 2>&1 || { cat build/dist.log; exit 1; }
	@$(DIST_ENV)/bin/python -c "import glob, os, sys, zipfile; \
		names = zipfile.ZipFile(glob.glob('dist/*.whl')[0]).namelist(); \
		missing = [m for m in ('_closelane', '_opstat') if os.name == 'posix' \
			and not any(n.startswith('hgext3rd/backgroundclose/engine/%s.' % m) \
				and n.endswith('.so') for n in names)]; \
		missing and sys.exit('dist: the wheel lacks %s (see build/dist.log)' \
			% ', '.join(missing))"
	@ls -1 dist

clean:
	rm -rf $(VENV) build dist *.egg-info tests/*.t.err \
		hgext3rd/backgroundclose/engine/*.so
