#!/usr/bin/env bash
# Benchmarks; figures and how they were taken are in BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "no benchmarks yet"
