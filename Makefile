# raxdb — `make run` serves on port 6379 (installing only what serving needs); `make test` installs
# what it needs and runs the suite; `make docker` builds the image.
# The venv's interpreter: tools/pick_python.sh says why the system's PGO build comes first.
PYTHON ?= $(shell tools/pick_python.sh)
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
# Two stamps, named after the interpreter (choosing another one rebuilds the venv): what serving
# needs, the package and the `build` extra that compiles it (`make run`), and what the tests, the
# lint and the benchmarks add, the `test` and `spark` extras (`make test`, `make lint`, `make bench`).
STAMP      := $(VENV)/.installed$(subst /,-,$(PYTHON))
TEST_STAMP := $(VENV)/.installed-test$(subst /,-,$(PYTHON))

.PHONY: run test test-pure lint bench fuzz venv build wheel redis-oracle partition-tools docker clean

COMMA := ,
# Each step prints one line; what its tools print goes to build/<step>.log, shown when it fails.
LOGGED = mkdir -p build && log=build/$(1).log && { $(2); } > $$log 2>&1 \
  || { cat $$log; echo "make: $(1) failed, its output is above (and in $$log)" >&2; exit 1; }

$(STAMP): pyproject.toml
	@grep -qx "executable = $$(realpath $$(command -v $(PYTHON)))" $(VENV)/pyvenv.cfg 2>/dev/null || rm -rf $(VENV)
	@echo "make: the virtual environment $(VENV) and what serving needs (build/install.log)"
	@$(call LOGGED,install,$(PYTHON) -m venv $(VENV) && $(PIP) install --upgrade pip && RAXDB_PURE=1 $(PIP) install -e '.[build]')
	@touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	@echo "make: what the tests, the lint and the benchmarks add (build/install-test.log)"
	@$(call LOGGED,install-test,RAXDB_PURE=1 $(PIP) install -e '.[build$(COMMA)test$(COMMA)spark$(COMMA)spark-connect]')
	@touch $(TEST_STAMP)

venv: $(STAMP)

# The hot modules compiled in place (setup.py says which, and why it is optional).  build_ext
# compiles only what is older than its source, so an unchanged tree costs a second here; with
# PURE=1 it compiles nothing and removes the compiled modules, and everything runs interpreted.
# A module that does not compile (each is optional) is named here and by the server at start-up
# (server/base/compiled.py).
build: $(STAMP)
	@echo "make: compiling the hot modules (build/build.log)"
	@$(call LOGGED,build,$(if $(filter 1,$(PURE)),RAXDB_PURE=1) $(PY) setup.py build_ext --inplace --parallel 2)
	@grep -h 'extension ".*" failed' build/build.log || true

# An installable wheel in dist/, its hot modules compiled (what docker/Dockerfile's build stage
# makes): `pip install dist/raxdb-*.whl` on a machine of the same Python and platform needs no
# compiler.  pip builds it in an isolated environment with the [build-system] requirements.
wheel: $(STAMP)
	@echo "make: building the wheel in dist/ (build/wheel.log)"
	@$(call LOGGED,wheel,$(PIP) wheel --no-deps --wheel-dir dist .)
	@ls dist/raxdb-*.whl

run: build
	$(VENV)/bin/raxdb-server $(ARGS)

# The oracle: a real redis-server 7.0 for the differential tests and benchmarks.
redis-oracle:
	@command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 && command -v redis-benchmark >/dev/null 2>&1 || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null; }
	@redis-server --version

# ruff, then the rule of the house: import-linter's contracts (pyproject.toml) keep the layers in
# order, tools/import_cycles.py keeps each circle inside one folder and at most four modules,
# tools/private_names.py keeps every module's `_private` names its own, and
# tools/gen_module_index.py keeps docs/modules.md (a line a module, from its docstring) true.
lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check raxdb/__init__.py raxdb/_version.py server protocol storage pipeline embed testing tests bench tools docker setup.py
	PYTHONPATH=$(CURDIR) $(VENV)/bin/lint-imports
	$(PY) tools/import_cycles.py --check
	$(PY) tools/private_names.py --check
	$(PY) tools/gen_module_index.py --check
	$(VENV)/bin/mypy -p raxdb

# The partition tests (tests/integration/test_partitions.py) put nodes on hosts of their own, network
# namespaces made as root: ip and tc (iproute2) make and slow the links, nft (nftables) cuts them.
# Not root: nothing to install, those tests skip and say why.
partition-tools:
	@command -v ip >/dev/null 2>&1 && command -v tc >/dev/null 2>&1 && command -v nft >/dev/null 2>&1 || \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 nftables >/dev/null; \
	  else echo "make: not root, the partition tests will skip (they need network namespaces)"; fi

# Node client libraries (ioredis, node-redis) for the client-library tests, pinned by package-lock.json.
tests/libraries/node_modules/.installed: tests/libraries/package.json tests/libraries/package-lock.json
	npm ci --prefix tests/libraries --no-audit --no-fund --loglevel=error
	touch $@

test: build $(TEST_STAMP) redis-oracle partition-tools lint tests/libraries/node_modules/.installed
	$(MAKE) --no-print-directory test-pure
	$(PY) -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

# The interpreted fallback stays honest: all of tests/unit (every command family's handlers) and
# the storage tests marked `pure`, run in a copy of the tree without its compiled modules (the
# tests run the tree they sit in, tests/support/servers.py's ROOT).  To fit CI's budget each
# property test runs 1/PURE_SAMPLE of its examples here (tests/conftest.py); the compiled run
# below runs them all.
PURE_TESTS ?= -m "unit or pure"
PURE_ARGS ?= -n 2
PURE_SAMPLE ?= 4
test-pure: $(TEST_STAMP) redis-oracle
	rm -rf build/pure && mkdir -p build/pure
	tar -cf - --exclude='*.so' --exclude=./.venv --exclude=./build --exclude=./.git --exclude=node_modules . \
	  | tar -xf - -C build/pure
	cd build/pure && ../../$(PY) -c 'import raxdb.server.commands, raxdb.server.base.compiled as c; assert not c.compiled_modules()'
	cd build/pure && RAXDB_TEST_SAMPLE=$(PURE_SAMPLE) ../../$(PY) -m pytest -q -p no:cacheprovider $(PURE_ARGS) $(PURE_TESTS)

# Coverage-guided fuzzing (atheris; tests/fuzz/targets/, docs/testing.md's Fuzzing): each target in
# turn for FUZZ_SECONDS, at the lowest CPU priority; new inputs and any crash go to build/fuzz/.
# The last line of each is libFuzzer's count of executions.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= resp restore rdbfile aof manifest bus nodesconf config lua
fuzz: build $(TEST_STAMP)
	@mkdir -p build/fuzz
	@for t in $(FUZZ_TARGETS); do \
	  echo "make fuzz: $$t for $(FUZZ_SECONDS) s (build/fuzz/$$t.log)"; \
	  nice -n 19 $(PY) -m tests.fuzz.targets.run $$t --seconds $(FUZZ_SECONDS) > build/fuzz/$$t.log 2>&1 \
	    || { tail -40 build/fuzz/$$t.log; echo "make fuzz: $$t failed; its input is in build/fuzz/artifacts/" >&2; exit 1; }; \
	  grep -h '^Done' build/fuzz/$$t.log; \
	done

# The write rows again in the configurations users run: over TLS, a cache under a memory limit, the AOF on.
BENCH_CONFIG_ROWS = SET,INCR,MSET,LPUSH,LPOP,SADD,HSET,ZADD,XADD
bench: build $(TEST_STAMP) redis-oracle
	$(PY) bench/bench.py $(BENCH_ARGS)
	$(PY) bench/bench.py --tls --only $(BENCH_CONFIG_ROWS),GET,LRANGE_100
	$(PY) bench/bench.py --only $(BENCH_CONFIG_ROWS) --server-args "--maxmemory 1gb --maxmemory-policy allkeys-lru"
	$(PY) bench/bench.py --only $(BENCH_CONFIG_ROWS) --server-args "--appendonly yes --appendfsync everysec"
	$(PY) bench/startup.py

# The image (docker/Dockerfile), with docker or podman: whichever is installed and has a running
# engine.  Where there is none it says so and fails, rather than pretend to have built something.
ENGINE ?= $(firstword $(foreach e,docker podman,$(shell command -v $(e) 2>/dev/null)))
docker:
	@if [ -z "$(ENGINE)" ]; then \
	  echo "make docker: no container engine here (neither docker nor podman is installed); nothing built" >&2; exit 1; fi
	@$(ENGINE) info >/dev/null 2>&1 || { \
	  echo "make docker: $(ENGINE) is installed but its engine is not running or not reachable; nothing built" >&2; exit 1; }
	$(ENGINE) build -f docker/Dockerfile -t raxdb .

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache
	find server storage protocol pipeline -name '*.so' -delete
