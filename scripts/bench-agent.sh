#!/usr/bin/env bash
# Reproduces the agent duties' figures in docs/benchmarks.md: carrier up -> first gratuitous
# ARP and -> the leaf's entry right, a deleted policy rule -> restored (each next to a shell
# baseline doing the same job), and CPU/RSS with 8 RoCE NICs, 64 pod attachments and a scrape
# every 15 s next to prometheus-node-exporter's infiniband collector; all in one run.
# Usage (as root): ./scripts/bench-agent.sh [cycles] [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench-agent.sh: run as root (it creates network namespaces)" >&2; exit 1; }
./scripts/install-deps.sh bench
export PATH="$HOME/.cargo/bin:$PATH"
tests/k8s/build.sh >/dev/null
# The agent measured is the release build; the driver (and the CNI it uses to attach pods)
# only sets the scene, so it stays a debug build.
cargo build --release --locked --quiet -p spinel-agent --bin spinel-agent
export SPINEL_AGENT_BIN="$PWD/target/release/spinel-agent"
cargo run --locked --quiet -p spinel-netns-tests --example agent_bench -- "${1:-20}" "${2:-120}"
