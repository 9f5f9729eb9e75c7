# Tether — build, test, demo and benchmarks.
# `make test` and `make demo` work on a fresh Debian 12 machine: `setup` installs what is missing.

SWIFT       ?= swift
CONFIG      ?= debug
SWIFT_FLAGS ?=
BIN_DIR      = $(shell $(SWIFT) build -c $(CONFIG) $(SWIFT_FLAGS) --show-bin-path 2>/dev/null)

# System packages the build and the tests need (Debian names). python3 also runs
# Tests/Terminal/pty-drive.py, which puts the CLI on a pseudo-terminal for the interactive tests.
APT_PACKAGES = libcurl4-openssl-dev libssl-dev libjemalloc-dev libssh2-1-dev libsqlite3-dev sqlite3 pkg-config openssh-server openssh-client curl jq python3 python3-venv chromium chromium-driver fonts-liberation libqrencode-dev
# Test-only: node checks the page's scripts (`node --check`, in Tests/Page/page-test.sh);
# postgresql's server programs (initdb, pg_ctl) run the throwaway cluster the shared log's tests
# and the fleet's failover test use (Tests/TetherTestSupport/PostgresTestCluster.swift).
TEST_APT_PACKAGES = nodejs postgresql

# Fuzzing (README, "Fuzzing"): seconds per target for `make fuzz`, and for the short pass `make test` runs.
FUZZ_SECONDS       ?= 60
FUZZ_SHORT_SECONDS ?= 10
FUZZ_BUILD_PATH     = .build-fuzz

.PHONY: all setup test-setup build release test live-test acp-test gateway-api-check page-test demo bench clean fuzz fuzz-short fuzz-build

all: build

# Installs the Debian packages of $(1) that are missing.
define apt_install
	@missing=""; \
	for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "setup: installing$$missing" >&2; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq >&2 && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >&2; \
	fi
endef

setup:
	$(call apt_install,$(APT_PACKAGES))

# What only the tests need, installed by the test targets (not by `make demo`'s setup).
test-setup: setup
	$(call apt_install,$(TEST_APT_PACKAGES))

build: setup
	$(SWIFT) build -c $(CONFIG) $(SWIFT_FLAGS)

# Release builds link the Swift runtime and Foundation statically: half the start-up (no symbol
# binding across a dozen Swift libraries) and direct calls into the runtime (bench/PROFILE.md).
RELEASE_FLAGS = --static-swift-stdlib
# They also pack the binary's relative relocations (Package.swift, `packedRelocations`): a few MB
# less memory for every command, but the binary then needs glibc 2.36 or later, so only where
# the build machine has it. PACK_RELOCATIONS=0 turns it off.
PACK_RELOCATIONS ?= $(shell ldd --version 2>/dev/null | head -n1 | awk '{ split($$NF, v, "."); print (v[1] > 2 || (v[1] == 2 && v[2] >= 36)) ? 1 : 0 }')

release:
	TETHER_PACK_RELOCATIONS=$(PACK_RELOCATIONS) $(MAKE) build CONFIG=release SWIFT_FLAGS="$(SWIFT_FLAGS) $(RELEASE_FLAGS)"

# Suites run one after another: many start simulators in-process, which share Swift's
# cooperative pool with the tests, and on 2 cores parallel suites starved them (a 30 s stall was
# seen). Serial, the Swift suites take about a quarter of an hour, deterministically. Their
# temporary files (configs, state directories, keys, logs: a thousand directories a run) go into
# one directory (TMPDIR), removed afterwards whatever the outcome.
test: build test-setup
	scratch=$$(mktemp -d /tmp/tether-tests-XXXXXX) && { TMPDIR="$$scratch" $(SWIFT) test --no-parallel $(SWIFT_FLAGS); status=$$?; rm -rf "$$scratch"; exit $$status; }
	TETHER_BIN="$(BIN_DIR)/tether" bash Tests/Live/codex-live.sh
	TETHER_BIN="$(BIN_DIR)/tether" bash Tests/ACP/acp-client.sh
	TETHER_BIN="$(BIN_DIR)/tether" bash Tests/Gateway/api-check.sh
	TETHER_BIN="$(BIN_DIR)/tether" bash Tests/Page/page-test.sh
	$(MAKE) fuzz-short

# The gateway's OpenAPI document: validated, then schemathesis against a live `tether serve`.
gateway-api-check: build
	TETHER_BIN="$(BIN_DIR)/tether" bash Tests/Gateway/api-check.sh

# The gateway's page in headless Chromium (Debian's chromium and chromium-driver) over WebDriver
# (PyPI selenium), against a live `tether serve`; the phone screenshot lands in .build-page/.
page-test: build test-setup
	TETHER_BIN="$(BIN_DIR)/tether" bash Tests/Page/page-test.sh

# Live end-to-end test against a real codex (PyPI openai-codex-cli-bin) and a local fake model.
live-test: build
	TETHER_BIN="$(BIN_DIR)/tether" bash Tests/Live/codex-live.sh

# `tether acp` driven by PyPI's agent-client-protocol against each agent simulator.
acp-test: build
	TETHER_BIN="$(BIN_DIR)/tether" bash Tests/ACP/acp-client.sh

demo: build
	@"$(BIN_DIR)/tether" demo

# libFuzzer targets with AddressSanitizer, a package of their own (Fuzz/) with its own build
# directory, so the sanitizers never reach the main build.
fuzz-build: setup
	@echo "fuzz: building the libFuzzer targets (-sanitize=fuzzer,address) in $(FUZZ_BUILD_PATH); from cold this takes a few minutes" >&2
	$(SWIFT) build -c debug --package-path Fuzz --build-path "$(CURDIR)/$(FUZZ_BUILD_PATH)" -Xswiftc -sanitize=fuzzer,address >&2

# Each target for FUZZ_SECONDS on its seed corpus (built from the transcripts under Tests/).
fuzz: fuzz-build
	FUZZ_BUILD_PATH="$(FUZZ_BUILD_PATH)" bash Fuzz/run.sh $(FUZZ_SECONDS)

# The short pass `make test` runs: each target for FUZZ_SHORT_SECONDS.
fuzz-short: fuzz-build
	FUZZ_BUILD_PATH="$(FUZZ_BUILD_PATH)" bash Fuzz/run.sh $(FUZZ_SHORT_SECONDS)

bench: setup
	TETHER_PACK_RELOCATIONS=$(PACK_RELOCATIONS) $(SWIFT) build -c release $(SWIFT_FLAGS) $(RELEASE_FLAGS)
	bash bench/run.sh

clean:
	rm -rf .build $(FUZZ_BUILD_PATH) .build-acp .build-page
