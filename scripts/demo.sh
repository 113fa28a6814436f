#!/usr/bin/env bash
# The product's main job on the real control plane (tests/cluster/; `make demo` builds it
# first): a blocked drain, the surge, the drain completing, the revert. Exits non-zero unless
# all of it happened.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --bin eviction-autoscaler
cargo run -q --example demo
