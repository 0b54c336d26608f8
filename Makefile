# tcplab — build, demo, test, bench.  `make demo` and `make test` are the two entry points.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
export PYO3_PYTHON := $(abspath $(PY))
CARGO ?= cargo

.PHONY: all venv build build-ext build-tools pgo demo test test-rust lint test-py test-py-sim test-py-real test-py-quiet bench clean fmt system-deps report-shots \
	dist docs fuzz

# Portable builds: every cargo and maturin command here builds for the host's triple named
# explicitly and links through zig against glibc 2.17's symbols (packaging/zig-cc), so the
# extension `make build` installs, the real-stack binaries and the wheel of `make dist` run on
# any manylinux2014 system, and `make dist` packs what `make build` compiled (no second
# compile). Host tools (build scripts, proc macros) stay on the host's linker.
TRIPLE := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
export CARGO_BUILD_TARGET := $(TRIPLE)
export CARGO_TARGET_$(shell echo '$(TRIPLE)' | tr 'a-z-' 'A-Z_')_LINKER := $(abspath packaging/zig-cc)
export TCPLAB_ZIG_TARGET := $(firstword $(subst -, ,$(TRIPLE)))-linux-gnu.2.17
export TCPLAB_VENV := $(abspath $(VENV))
# Python keeps its bytecode caches here even where the environment turns them off: the tests
# start hundreds of tcplab processes, and each would compile the package again (a third of
# a CLI's start-up), as would pytest's assertion rewriting in each of its processes.
unexport PYTHONDONTWRITEBYTECODE

all: build

# The virtualenv with the package's dependencies and the build tools.
$(VENV)/.deps: pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "maturin>=1.16,<2" "ziglang>=0.17,<0.18"
	touch $@

venv: $(VENV)/.deps

# Debian's Chromium renders the HTML report in a browser test (headless); Debian's tshark
# (Wireshark's dissector) checks the simulator's and the emulator's pcapng traces. Installed by the
# project itself when missing (needs root, as on CI).
system-deps:
	@command -v nft >/dev/null 2>&1 || { \
	  echo "installing nftables (PEP proxy transparent-mode test)"; \
	  apt-get install -y -q nftables >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null && apt-get install -y -q nftables >/dev/null; } || \
	  echo "warning: could not install nftables; the transparent-mode test will be skipped"; }
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian chromium (report browser test)"; \
	  apt-get install -y -q chromium >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; } || \
	  echo "warning: could not install chromium; the browser test will be skipped"; }
	@command -v ethtool >/dev/null 2>&1 || { \
	  echo "installing Debian ethtool (tcplab emulate --link netem: offloads off)"; \
	  apt-get install -y -q ethtool >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null && apt-get install -y -q ethtool >/dev/null; } || \
	  echo "warning: could not install ethtool; --link auto will use tcplab-emu"; }
	@command -v iperf3 >/dev/null 2>&1 || { \
	  echo "installing Debian iperf3 (tcplab emulate)"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -q iperf3 >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null && apt-get install -y -q iperf3 >/dev/null; } || \
	  echo "warning: could not install iperf3; the real-stack tests will be skipped"; }
	@command -v tcpdump >/dev/null 2>&1 || { \
	  echo "installing Debian tcpdump (tcplab emulate --pcap)"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -q tcpdump >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null && apt-get install -y -q tcpdump >/dev/null; } || \
	  echo "warning: could not install tcpdump; the emulate capture test will be skipped"; }
	@command -v tshark >/dev/null 2>&1 || { \
	  echo "installing Debian tshark (Wireshark's dissector checks the pcapng traces)"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null; \
	  apt-get install -y -q tshark >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null && apt-get install -y -q tshark >/dev/null; } || \
	  echo "warning: could not install tshark; the Wireshark trace tests will be skipped"; }


# Build the Rust extension in release mode and install the package (editable) into .venv;
# also the real-stack binaries (target/<triple>/tools/tcplab-emu, tcplab-pep; found by
# tcplab.realstack).
# The two builds run side by side: maturin first installs the Python dependencies (mostly
# unpacking, one core), which the real-stack binaries' compile fills.
build: venv
	$(MAKE) --no-print-directory -j2 --output-sync=target build-ext build-tools

# The extension is compiled with the core's profile (profile-guided optimization, see
# python/tcplab/tools/pgo.py; `make pgo` refreshes it). rustc reads the profile but cargo does
# not watch it, so the build names a copy after its content: a new profile is a new flag,
# which rebuilds.
# `make dist` packs with the same flags, so cargo finds the extension built and compiles none.
PGO_PROFILE := packaging/pgo/tcplab.profdata
PGO_COPY := target/pgo/$(firstword $(shell sha256sum $(PGO_PROFILE) 2>/dev/null | cut -c1-16)).profdata
PGO_RUSTFLAGS := -Cprofile-use=$(abspath $(PGO_COPY))

build-ext: venv
	@mkdir -p target/pgo && cp $(PGO_PROFILE) $(PGO_COPY)
	RUSTFLAGS="$(PGO_RUSTFLAGS)" \
	VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/maturin develop --release --extras dev -q

# Train the core's profile again (after changing the core; `make lint` says when) and rebuild.
pgo: build
	rustup component add llvm-tools
	$(PY) -m tcplab.tools.pgo
	$(MAKE) --no-print-directory build-ext

build-tools:
	$(CARGO) build --profile tools -q -p tcplab-emu -p tcplab-pep

demo: build
	$(BIN)/tcplab demo --out demo-out

# The build runs beside the system packages' installation (network and dpkg, little CPU). Then
# the Rust tests (clippy last: beside the Rust tests' own compile it took longer) run beside
# the wheel, the API docs and the linters, one after the other, their output kept whole per
# step; then the Python tests, both groups at once (see test-py). The wheel goes first, so it
# is packed before the Rust tests relink the real-stack binaries. BUILT=1 tells those steps the
# build is done.
test: venv
	$(MAKE) --no-print-directory -j3 --output-sync=target build-ext build-tools system-deps
	$(MAKE) --no-print-directory -j2 --output-sync=target BUILT=1 test-rust dist docs lint
	$(MAKE) --no-print-directory BUILT=1 test-py

# `build` as a prerequisite, unless a `make test` already built (BUILT=1)
BUILD := $(if $(BUILT),,build)

# The core's tests build without fat LTO (the tools profile: same optimization level, 16
# codegen units): fat LTO of every test binary tripled the build for no change in what is tested.
test-rust:
	$(CARGO) test --profile tools -p tcplab-core
	$(CARGO) test --profile tools -p tcplab-pep
	$(CARGO) test --profile tools -p tcplab-emu
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings

lint: $(BUILD)
	$(CARGO) fmt --all -- --check
	$(BIN)/ruff check python tests
	$(BIN)/ruff format --check python tests
	$(BIN)/mypy python/tcplab tests
	$(BIN)/python -m mypy.stubtest tcplab._core
	$(PY) -m tcplab.tools.pgo --check

# tests/dist installs dist/'s wheel into a fresh virtualenv: `dist` is part of the chain
# Two groups. The simulator's tests are CPU-bound and spread over two workers; the real
# emulations time the kernel's TCP on the wall clock, one after another, and mostly wait. With
# -j2 (as `make test` runs it) both go at once, the CPU-bound group at the lowest priority
# (nice 19: a CPU weight of 15 against the emulations' 1024), so an emulation's process gets
# a core as soon as it wakes while the simulations take the rest. Measured on this 2-core VM:
# 420 s for both at once against 338 + 290 s one after the other, every test green.
# Tests marked quiet measure the emulator itself, so they run after both, with the machine
# to themselves.
test-py:
	$(MAKE) --no-print-directory -j2 --output-sync=target test-py-sim test-py-real
	$(MAKE) --no-print-directory test-py-quiet

test-py-sim: $(BUILD) system-deps $(if $(BUILT),,dist)
	nice -n 19 $(BIN)/pytest -q -rs -n 2 --dist worksteal -m "not slow and not real_time"

test-py-real: $(BUILD) system-deps
	$(BIN)/pytest -q -rs -m "real_time and not slow and not quiet"

test-py-quiet: $(BUILD) system-deps
	$(BIN)/pytest -q -rs -m "quiet and not slow"

# The sdist and a portable wheel (manylinux2014, with the real-stack binaries, the examples and
# the build's commit) in dist/, packed from what `make build` compiled; see packaging/dist.py.
dist: $(BUILD)
	RUSTFLAGS="$(PGO_RUSTFLAGS)" $(PY) packaging/dist.py

# The API reference, generated from the docstrings (pdoc; Markdown docstrings) into
# build/docs/api/index.html. Any warning of the generator fails the build (-W error): `make test`
# runs it.
DOC_MODULES := tcplab tcplab.examples tcplab.scenario.load tcplab.results.series \
	tcplab.results.theory tcplab.results.provenance tcplab.study.grid tcplab.study.paper
docs: $(BUILD)
	rm -rf build/docs/api
	$(PY) -W error -m pdoc --docformat markdown -o build/docs/api $(DOC_MODULES)

bench: build
	$(BIN)/python -m tcplab.tools.bench

# The input-boundary fuzz of `make test` (tests/test_fuzz.py) with more cases: every malformed
# file or argument must end in exit 0 or a one-line error (exit 2). FUZZ_SEED and FUZZ_JOBS
# (worker processes) pick the cases.
FUZZ_CASES ?= 2000
FUZZ_SEED ?= 1
FUZZ_JOBS ?= 4
fuzz: build
	$(BIN)/python -m tcplab.tools.fuzz --cases $(FUZZ_CASES) --seed $(FUZZ_SEED) \
	  --jobs $(FUZZ_JOBS) --subprocess-every 200

# Screenshots of two preset reports as headless Chromium renders them (short runs; not
# committed): build/report-shots/goodput-ns2.png and cca-survey.png.
SHOTS := build/report-shots
report-shots: build system-deps
	mkdir -p $(SHOTS)
	cd $(SHOTS) && $(abspath $(BIN))/tcplab study run goodput-ns2 --duration 5s --no-progress
	cd $(SHOTS) && $(abspath $(BIN))/tcplab study run cca-survey --duration 10s --repetitions 2 --no-progress
	for n in goodput-ns2 cca-survey; do \
	  chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars \
	    --user-data-dir=$(abspath $(SHOTS))/profile --window-size=1280,6000 \
	    --screenshot=$(abspath $(SHOTS))/$$n.png file://$(abspath $(SHOTS))/$$n.html; done

fmt:
	$(CARGO) fmt --all
	$(BIN)/ruff format python tests

clean:
	rm -rf target $(VENV) demo-out build dist
