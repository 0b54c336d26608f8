# tcplab — build, demo, test, bench.  `make demo` and `make test` are the two entry points.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
export PYO3_PYTHON := $(abspath $(PY))
CARGO ?= cargo

.PHONY: all venv build demo test test-rust lint test-py bench clean fmt

all: build

# The virtualenv with the package's dependencies and the build tools.
$(VENV)/.deps: pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "maturin>=1.7,<2"
	touch $@

venv: $(VENV)/.deps

# Build the Rust extension in release mode and install the package (editable) into .venv.
build: venv
	VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/maturin develop --release --extras dev -q

demo: build
	$(BIN)/tcplab demo --out demo-out

test: build test-rust lint test-py

test-rust:
	$(CARGO) test --release -p tcplab-core
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings

lint: build
	$(BIN)/ruff check python tests
	$(BIN)/mypy python/tcplab tests
	$(BIN)/python -m mypy.stubtest tcplab._core

test-py: build
	$(BIN)/pytest -q

bench: build
	$(BIN)/python -m tcplab.bench

fmt:
	$(CARGO) fmt --all
	$(BIN)/ruff format python tests

clean:
	rm -rf target $(VENV) demo-out
