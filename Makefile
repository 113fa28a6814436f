# The two commands that do everything on a fresh machine:
#   make demo   the product's main job on the embedded Kubernetes emulator (kube-sim);
#               `make demo CLUSTER=real` runs it on the real control plane
#   make test   every test (unit, component, kube-sim's own, end to end on the real control plane,
#               the core scenarios again on the oldest supported Kubernetes); `make test-unit`
#               (no control plane) and `make test-e2e` are its two halves
CARGO   ?= cargo
KUBECTL ?= kubectl
# Where `make demo` runs: sim (kube-sim, embedded) or real (tests/cluster/, built from Go modules).
CLUSTER ?= sim
# cargo-nextest runs test binaries in parallel; plain `cargo test` is the fallback.
NEXTEST := $(shell $(CARGO) nextest --version >/dev/null 2>&1 && echo yes)

.PHONY: build test test-unit test-e2e test-oldest lint fmt crd demo bench fuzz cluster cluster-build check-tools check-kubectl

check-tools:
	@command -v $(CARGO) >/dev/null || { echo "error: cargo not found (install Rust with rustup: https://rustup.rs)"; exit 1; }

# kube-sim's tests and the kube-sim demo drive the machine's kubectl; the real control plane
# brings its own (built with it).
check-kubectl:
	@command -v $(KUBECTL) >/dev/null || { echo "error: kubectl not found on PATH (kube-sim's tests and the demo drive the real kubectl; install kubectl 1.32+)"; exit 1; }

build: check-tools
	$(CARGO) build --workspace --all-targets

# The real control plane (kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kubectl,
# kwok) from the Go modules pinned in tests/cluster/, cached by version under target/cluster/:
# KUBE_VERSION, then OLDEST_KUBE_VERSION (the oldest Kubernetes the product supports).
cluster-build:
	tests/cluster/build.sh
	tests/cluster/build.sh $(shell sed -n 's/^OLDEST_KUBE_VERSION=//p' tests/cluster/versions.env)

# Starts that control plane on loopback and prints how to use it; Ctrl-C stops it.
cluster: check-tools cluster-build
	$(CARGO) run -q --example cluster

# The end-to-end scenarios are the root package's tests/e2e_*.rs files.
E2E_FILTER := binary(/^e2e_/)
# The core ones run again on the oldest supported Kubernetes (OLDEST_KUBE_VERSION).
OLDEST_SUITES := e2e_drain e2e_default_pdb e2e_install

test: check-tools check-kubectl cluster-build
ifeq ($(NEXTEST),yes)
	$(CARGO) nextest run --workspace --no-fail-fast
else
	@echo "note: cargo-nextest not found (cargo install cargo-nextest); running cargo test"
	$(CARGO) test --workspace --no-fail-fast
endif
	$(MAKE) --no-print-directory test-oldest

# The fast loop: unit, component and kube-sim tests, no control plane needed.
test-unit: check-tools check-kubectl
ifeq ($(NEXTEST),yes)
	$(CARGO) nextest run --workspace --no-fail-fast -E 'not $(E2E_FILTER)'
else
	$(CARGO) test --workspace --exclude eviction-autoscaler --no-fail-fast
	$(CARGO) test -p eviction-autoscaler --no-fail-fast --bins --test cli --test deploy_manifests
endif

# Only the end-to-end scenarios, on the real control plane.
test-e2e: check-tools cluster-build
ifeq ($(NEXTEST),yes)
	$(CARGO) nextest run --workspace --no-fail-fast -E '$(E2E_FILTER)'
else
	$(CARGO) test --no-fail-fast $(patsubst tests/%.rs,--test %,$(wildcard tests/e2e_*.rs)) $(patsubst tests/%/main.rs,--test %,$(wildcard tests/e2e_*/main.rs))
endif
	$(MAKE) --no-print-directory test-oldest

# The drain, default-PDB and install scenarios on the oldest supported Kubernetes.
test-oldest: check-tools cluster-build
ifeq ($(NEXTEST),yes)
	CLUSTER_VERSION=oldest $(CARGO) nextest run --no-fail-fast $(foreach s,$(OLDEST_SUITES),-E 'binary($(s))')
else
	CLUSTER_VERSION=oldest $(CARGO) test --no-fail-fast $(addprefix --test ,$(OLDEST_SUITES))
endif

lint: check-tools
	$(CARGO) fmt --all -- --check
	$(CARGO) fmt --manifest-path fuzz/Cargo.toml -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt: check-tools
	$(CARGO) fmt --all

# deploy/base/crd.yaml is generated from the Rust type, and the Helm chart reads a copy of it;
# a test fails when either is out of date.
crd: check-tools
	$(CARGO) run -q -- crd > deploy/base/crd.yaml
	cp deploy/base/crd.yaml deploy/helm/eviction-autoscaler/files/crd.yaml

ifeq ($(CLUSTER),real)
demo: check-tools cluster-build
else
demo: check-tools check-kubectl
endif
	CLUSTER=$(CLUSTER) ./scripts/demo.sh

bench: check-tools cluster-build
	./scripts/bench.sh

# Every fuzz target (fuzz/README.md) for FUZZ_SECONDS each (default 40, about 4 minutes in
# all), or FUZZ_RUNS executions each; needs a nightly toolchain and cargo-fuzz (it says how).
fuzz: check-tools
	./scripts/fuzz.sh
