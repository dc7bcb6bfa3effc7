#!/usr/bin/env bash
# The CNI walk-through (the quick start before the lab): installs what is missing and runs
# a namespace-simulated SR-IOV node, two pods attached by the real spinel CNI plugin, ping,
# CHECK, DEL, and every VF back on the host. Usage (as root on Debian 12): ./scripts/demo-cni.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "demo-cni.sh: run as root (it creates network namespaces)" >&2; exit 1; }
./scripts/install-deps.sh demo
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked --quiet -p spinel-cni -p spinel-test-tools --bin spinel --bin spinel-demo
SPINEL_BIN="$PWD/target/release/spinel" exec ./target/release/spinel-demo
