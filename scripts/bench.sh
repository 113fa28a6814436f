#!/usr/bin/env bash
# Benchmarks; figures and how they were taken are in BENCHMARKS.md. Not timed tests: run by
# hand (`make bench`) on a quiet machine and record what you measured.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== webhook: product vs constant-allow floor (wrk closed loop, open loop at 1,000 req/s)"
webhook/bench/run.sh
echo "== memory of one replica at cluster scale on the real control plane (sizes deploy/base/deployment.yaml)"
scripts/bench_memory.sh
echo "== drain time and signal -> scale latency on the real control plane"
cargo bench --bench drain
echo "== audit at scale: eviction-autoscaler audit -A vs kubectl get on a seeded bare apiserver"
cargo bench --bench audit
echo "== census: the Lease holder's PDB census over the caches (pdbs, drain_blockers gauges)"
cargo bench --bench census
