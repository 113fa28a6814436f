#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ (fuzz/README.md) with cargo-fuzz (libFuzzer) on a nightly
# toolchain, each for FUZZ_SECONDS (default 40: six targets in about four minutes) or, with
# FUZZ_RUNS=N, for N executions. New inputs go to a scratch directory, not to the committed
# corpora (FUZZ_MERGE=1 merges them in, minimised). Fails on any crash, timeout or
# out-of-memory, leaving the input under target/fuzz/artifacts/TARGET/.
set -euo pipefail
cd "$(dirname "$0")/.."

TOOLCHAIN=${FUZZ_TOOLCHAIN:-nightly}
if ! rustup run "$TOOLCHAIN" rustc --version >/dev/null 2>&1; then
  echo "error: the fuzz targets need a nightly Rust toolchain: rustup toolchain install $TOOLCHAIN --profile minimal" >&2
  exit 1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "error: cargo-fuzz is missing: cargo install cargo-fuzz --locked" >&2
  exit 1
fi
targets=(${FUZZ_TARGETS:-webhook_bytes admission_review config annotations selector_intstr cert_secret})
# -O with debug assertions (overflow checks on); no sanitizer: the project forbids unsafe code
# and libFuzzer's coverage is what finds panics. One target dir, beside the workspace's.
build=(-O -a -s none --target-dir target/fuzz)
# The fuzz crate is outside the workspace, so `make lint` does not see it: lint it here.
cargo "+$TOOLCHAIN" clippy --manifest-path fuzz/Cargo.toml --target-dir target/fuzz --all-targets -- -D warnings
cargo "+$TOOLCHAIN" fuzz build "${build[@]}"

if [[ -n "${FUZZ_RUNS:-}" ]]; then limit=(-runs="$FUZZ_RUNS"); else limit=(-max_total_time="${FUZZ_SECONDS:-40}"); fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
printf '%-18s %12s %8s %8s %10s %6s\n' target executions exec/s edges corpus secs
for target in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$target" "$scratch/$target" "target/fuzz/artifacts/$target"
  log="target/fuzz/$target.log"
  started=$SECONDS
  if ! cargo "+$TOOLCHAIN" fuzz run "${build[@]}" "$target" "$scratch/$target" "fuzz/corpus/$target" -- \
      "${limit[@]}" -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \
      -artifact_prefix="target/fuzz/artifacts/$target/" >"$log" 2>&1; then
    echo "error: $target failed; the input is under target/fuzz/artifacts/$target/, the log is $log:" >&2
    grep -v '^\(#\|"\|INFO\)' "$log" | tail -40 >&2
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  edges=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corpus=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  printf '%-18s %12s %8s %8s %10s %6s\n' "$target" "$runs" "$rate" "$edges" "$corpus" $((SECONDS - started))
  if [[ -n "${FUZZ_MERGE:-}" ]]; then
    cp -n "$scratch/$target"/* "fuzz/corpus/$target/" 2>/dev/null || true
    cargo "+$TOOLCHAIN" fuzz cmin "${build[@]}" "$target" "fuzz/corpus/$target" >"$log.cmin" 2>&1
  fi
done
