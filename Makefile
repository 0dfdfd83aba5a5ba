# Two commands do everything on a fresh machine: `make demo` and `make test`.
# `demo` installs rxreact with its runtime dependencies only (what a user gets from pip);
# `test` and the other targets add the development toolchain to the same .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
RUNTIME := $(VENV)/.installed-runtime
STAMP := $(VENV)/.installed

.PHONY: demo test lint verifytypes bench soak clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(RUNTIME): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $(RUNTIME)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test,lint,bench]'
	$(PY) -m ipykernel install --prefix $(VENV) --name python3 >/dev/null
	touch $(RUNTIME) $(STAMP)

demo: $(RUNTIME)
	$(VENV)/bin/rxreact demo

# Three workers on two cores, a test file each at a time (--dist loadfile keeps a file's module
# fixtures, its redis-server or postgres, in one process): most tests wait on sockets and child
# processes, so two workers kept the cores 70 % busy (7 min 07 s) and three keep them ~85 %
# busy (6 min 24 s). The slowest files go first (tests/conftest.py's SLOW_FIRST), so that no
# worker is left alone with a long file at the end.
# The suite starts hundreds of Python processes (workers killed and restarted, the CLI, the
# notebooks' kernels): each one compiles rxreact afresh where PYTHONDONTWRITEBYTECODE is set,
# ~3 s of CPU instead of ~1.3 s. So the test run keeps compiled files, in .venv/pycache, out of
# the source tree (and pytest keeps its rewritten test modules there too).
PYCACHE := env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX=$(CURDIR)/$(VENV)/pycache
test: $(STAMP)
	$(PYCACHE) $(PY) -m pytest -n 3 --dist loadfile --no-loadscope-reorder

lint: $(STAMP)
	$(VENV)/bin/ruff check rxreact tests benchmarks
	$(VENV)/bin/ruff format --check rxreact tests benchmarks
	$(VENV)/bin/mypy
	$(MAKE) verifytypes

# The public API's type completeness as pyright sees it: at least 95 %.
verifytypes: $(STAMP)
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/pyright --verifytypes rxreact --ignoreexternal \
		--outputjson | $(PY) -c 'import json, sys; \
		score = json.load(sys.stdin)["typeCompleteness"]["completenessScore"]; \
		print(f"pyright --verifytypes rxreact: {score:.1%} (at least 95% required)"); \
		sys.exit(score < 0.95)'

bench: $(STAMP)
	$(PY) -m benchmarks

# Not part of `make test`: 10,000 agent runs against a faulty loopback server (RELIABILITY.md).
SOAK_ARGS ?=
soak: $(STAMP)
	$(PY) -m benchmarks.soak $(SOAK_ARGS)

# Not part of `make test`: four `rxreact serve` workers on each database (SQLite, Redis, Redis
# Cluster, Postgres), 2,000 paced runs, one worker SIGKILLed (BENCHMARKS.md, many workers).
MANY_WORKERS_ARGS ?=
.PHONY: many-workers
many-workers: $(STAMP)
	$(PY) -m benchmarks.many_workers $(MANY_WORKERS_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
