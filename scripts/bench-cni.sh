#!/usr/bin/env bash
# Reproduces the CNI figures in docs/benchmarks.md: spinel vs Debian's host-device, both with
# host-local IPAM, in one run, alternating; the same job (--core) and with every RoCE step, at
# concurrency 1 and 16; without IPAM; the GARP time-to-correct; and bursts of 8 and 16
# concurrent ADDs then DELs (a job's start and end).
# Usage (as root): ./scripts/bench-cni.sh [cycles]
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench-cni.sh: run as root (it creates network namespaces)" >&2; exit 1; }
cycles=${1:-200}
./scripts/install-deps.sh demo
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked --quiet -p spinel-cni -p spinel-test-tools --bin spinel --bin cni-bench
export SPINEL_BIN="$PWD/target/release/spinel"
bench=./target/release/cni-bench
$bench --cycles "$cycles" --core
$bench --cycles "$((cycles * 16 / 10))" --concurrency 16 --core
$bench --cycles "$cycles"
$bench --cycles "$((cycles * 16 / 10))" --concurrency 16
$bench --cycles "$cycles" --no-ipam
$bench --garp --cycles "$((cycles / 2))"
# A job's pods starting and ending together: 8 and 16 concurrent ADDs, then DELs.
$bench --burst 5 --concurrency 8 --core
$bench --burst 4 --concurrency 16 --core
