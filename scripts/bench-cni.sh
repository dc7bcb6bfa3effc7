#!/usr/bin/env bash
# Reproduces the CNI figures in docs/benchmarks.md: spinel vs Debian's host-device, both with
# host-local IPAM, in one run, alternating, at concurrency 1 and 16; then both without IPAM.
# Usage (as root): ./scripts/bench-cni.sh [cycles]
set -euo pipefail
cd "$(dirname "$0")/.."
cycles=${1:-200}
./scripts/install-deps.sh demo
cargo build --release --locked --quiet -p spinel-cni -p spinel-netns-tests --bin spinel --bin cni-bench
export SPINEL_BIN="$PWD/target/release/spinel"
./target/release/cni-bench --cycles "$cycles" --concurrency 1
./target/release/cni-bench --cycles "$((cycles * 16 / 10))" --concurrency 16
./target/release/cni-bench --cycles "$cycles" --concurrency 1 --no-ipam
