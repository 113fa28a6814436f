# The two commands that do everything on a fresh machine:
#   make demo   the product's main job on the real control plane (tests/cluster/, built from
#               its Go modules on the first run)
#   make test   every test (unit, component, end to end on the real control plane, the core
#               scenarios again on the oldest supported Kubernetes); `make test-unit` (no
#               control plane) and `make test-e2e` (everything on one) are its two halves
CARGO   ?= cargo
# cargo-nextest runs test binaries in parallel; plain `cargo test` is the fallback.
NEXTEST := $(shell $(CARGO) nextest --version >/dev/null 2>&1 && echo yes)

.PHONY: build image test test-unit test-e2e test-oldest lint fmt crd demo bench fuzz cluster cluster-build cluster-core check-tools check-image-tools

check-tools:
	@command -v $(CARGO) >/dev/null || { echo "error: cargo not found (install Rust with rustup: https://rustup.rs)"; exit 1; }

# The image tests run it in a containerd of their own (tests/e2e_image.rs).
check-image-tools:
	@for tool in containerd ctr runc skopeo; do command -v $$tool >/dev/null || \
	  { echo "error: $$tool not found: the image tests need Debian's packages (apt-get install containerd runc skopeo)"; exit 1; }; done

build: check-tools
	$(CARGO) build --workspace --all-targets

# The product image as an OCI archive, target/image/eviction-autoscaler-<version>.oci.tar: the
# release binary on a minimal runtime, user 65532, no shell; no daemon, no registry; two builds
# of one commit give the same bytes (deploy/image/README.md). IMAGE_BINARY puts another build in.
IMAGE_DIR    ?= target/image
IMAGE_BINARY ?= target/release/eviction-autoscaler
image: check-tools
	$(CARGO) build --release --locked -p eviction-autoscaler -p eviction-autoscaler-image
	target/release/image-archive --binary $(IMAGE_BINARY) --out-dir $(IMAGE_DIR) \
	  --revision "$$(git describe --always --dirty --abbrev=40 --match=NONE 2>/dev/null || echo unknown)" \
	  --created "$$(git log -1 --format=%ct 2>/dev/null || echo 0)"

# The real control plane (kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kubectl,
# kwok) from the Go modules pinned in tests/cluster/, cached by version under target/cluster/:
# KUBE_VERSION with Helm and the third-party CRDs the tests use, then OLDEST_KUBE_VERSION (the
# oldest Kubernetes the product supports). cluster-core: KUBE_VERSION's control plane alone
# (what the demo needs).
cluster-build:
	tests/cluster/build.sh
	tests/cluster/build.sh $(shell sed -n 's/^OLDEST_KUBE_VERSION=//p' tests/cluster/versions.env)

cluster-core:
	tests/cluster/build.sh --core

# Starts that control plane on loopback and prints how to use it; Ctrl-C stops it.
cluster: check-tools cluster-core
	$(CARGO) run -q --example cluster

# Test binaries on the real control plane: the end-to-end scenarios (the root package's
# tests/e2e_*.rs) and the component tests against a real apiserver (<crate>/tests/cluster_*).
E2E_FILTER := binary(/^e2e_/) | binary(/^cluster_/)
# The core ones run again on the oldest supported Kubernetes (OLDEST_KUBE_VERSION).
OLDEST_SUITES := e2e_drain e2e_default_pdb e2e_install

test: check-tools check-image-tools cluster-build image
ifeq ($(NEXTEST),yes)
	$(CARGO) nextest run --workspace --no-fail-fast
else
	@echo "note: cargo-nextest not found (cargo install cargo-nextest); running cargo test"
	$(CARGO) test --workspace --no-fail-fast
endif
	$(MAKE) --no-print-directory test-oldest

# The fast loop, no control plane and no Go: unit tests, the webhook's router and TLS with
# recorded fixtures, the command line, the manifests (rendered with the kubectl
# `make cluster-build` built, else the one on PATH).
FAST_TESTS := $(filter-out e2e_% cluster_%,$(notdir $(basename $(wildcard tests/*.rs */tests/*.rs))))
test-unit: check-tools
ifeq ($(NEXTEST),yes)
	$(CARGO) nextest run --workspace --no-fail-fast -E 'not ($(E2E_FILTER))'
else
	$(CARGO) test --workspace --no-fail-fast --lib --bins $(addprefix --test ,$(FAST_TESTS))
endif

# Everything on the real control plane: the end-to-end scenarios and the component tests.
CLUSTER_TESTS := $(filter e2e_% cluster_%,$(notdir $(basename $(wildcard tests/*.rs */tests/*.rs) $(patsubst %/main.rs,%,$(wildcard */tests/*/main.rs)))))
test-e2e: check-tools check-image-tools cluster-build image
ifeq ($(NEXTEST),yes)
	$(CARGO) nextest run --workspace --no-fail-fast -E '$(E2E_FILTER)'
else
	$(CARGO) test --workspace --no-fail-fast $(addprefix --test ,$(CLUSTER_TESTS))
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

demo: check-tools cluster-core
	./scripts/demo.sh

bench: check-tools cluster-build
	./scripts/bench.sh

# Every fuzz target (fuzz/README.md) for FUZZ_SECONDS each (default 40, about 4 minutes in
# all), or FUZZ_RUNS executions each; needs a nightly toolchain and cargo-fuzz (it says how).
fuzz: check-tools
	./scripts/fuzz.sh
