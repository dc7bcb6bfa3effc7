#!/usr/bin/env bash
# Quick start 1: installs what is missing, builds Spinel and the Kubernetes harness, and runs
# Spinel's main job on the default lab (`spinelctl lab run`): a spine/leaf RoCE fabric of
# network namespaces where LLDP discovery, the fabric controller, kube-scheduler with Spinel's
# extender, the spinel CNI and the node agents each do their job, then everything is removed.
# Usage (as root on Debian 12): ./scripts/demo.sh [spinelctl lab run flags, e.g. --keep]
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "demo.sh: run as root (it creates network namespaces)" >&2; exit 1; }
./scripts/install-deps.sh demo
export PATH="$HOME/.cargo/bin:$PATH"
echo "demo: building Spinel (release) and the Kubernetes harness; the first build takes minutes" >&2
cargo build --release --locked --quiet -p spinelctl -p spinel-cni -p spinel-agent \
  -p spinel-fabric-controller -p spinel-scheduler
tests/k8s/build.sh >/dev/null
exec ./target/release/spinelctl lab run "$@"
