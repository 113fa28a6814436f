#!/usr/bin/env bash
# The product's main job on the embedded emulator. Until the controller lands this shows the
# pieces that exist: the validated configuration and the CRD the controller serves.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --workspace
bin=target/debug/eviction-autoscaler
echo "== eviction-autoscaler $($bin version)"
echo "== effective configuration (defaults = AKS basic install)"
$bin config
echo "== the EvictionAutoScaler CRD (kubectl get evictionautoscalers)"
$bin crd | head -20
