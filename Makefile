# The two commands that do everything on a fresh machine:
#   make demo   the product's main job on the embedded Kubernetes emulator (kube-sim)
#   make test   every test (unit, component, end-to-end with the real kubectl)
CARGO   ?= cargo
KUBECTL ?= kubectl
# cargo-nextest runs test binaries in parallel; plain `cargo test` is the fallback.
NEXTEST := $(shell $(CARGO) nextest --version >/dev/null 2>&1 && echo yes)

.PHONY: build test lint fmt crd demo bench check-tools check-kubectl

check-tools:
	@command -v $(CARGO) >/dev/null || { echo "error: cargo not found (install Rust with rustup: https://rustup.rs)"; exit 1; }

check-kubectl:
	@command -v $(KUBECTL) >/dev/null || { echo "error: kubectl not found on PATH (the end-to-end tests and the demo drive the real kubectl; install kubectl 1.32+)"; exit 1; }

build: check-tools
	$(CARGO) build --workspace --all-targets

test: check-tools check-kubectl
ifeq ($(NEXTEST),yes)
	$(CARGO) nextest run --workspace --no-fail-fast
else
	$(CARGO) test --workspace --no-fail-fast
endif

lint: check-tools
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt: check-tools
	$(CARGO) fmt --all

# deploy/base/crd.yaml is generated from the Rust type; a test fails when it is out of date.
crd: check-tools
	$(CARGO) run -q -- crd > deploy/base/crd.yaml

demo: check-tools check-kubectl
	./scripts/demo.sh

bench: check-tools
	./scripts/bench.sh
