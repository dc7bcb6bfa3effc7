#!/usr/bin/env bash
# Reproduces the lab figures in docs/benchmarks.md: `spinelctl lab run --json` (release build)
# at the default size and at 64 nodes; prints lab up time with its steps, up to labels
# published, and gang scheduling to every pod attached.
# Usage (as root): ./scripts/bench-lab.sh [runs per size]
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench-lab.sh: run as root (it creates network namespaces)" >&2; exit 1; }
runs=${1:-3}
./scripts/install-deps.sh demo
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked --quiet -p spinelctl -p spinel-cni -p spinel-agent \
  -p spinel-fabric-controller -p spinel-scheduler
tests/k8s/build.sh >/dev/null
state=$(mktemp -d)/lab
for size in "" "--nodes 64"; do
  for _ in $(seq "$runs"); do
    # shellcheck disable=SC2086 # the size flags are words
    ./target/release/spinelctl lab run --json --state-dir "$state" $size 2>/dev/null |
      python3 -c '
import json, sys
d = json.load(sys.stdin); f = d["figures"]
steps = {s["name"].split(":")[0]: s["ms"] for s in d["labSteps"]}
print(json.dumps({"nodes": len(d["labels"]), "labUpMs": f["labUpMs"],
  "upToLabelsMs": sum(s["ms"] for s in d["labSteps"][:1 + [s["name"] for s in d["labSteps"]].index(
      "fabric discovered: every node carries its topology labels")]),
  "gangPlacedMs": f["gangPlacedMs"], "attachAllMs": f["attachAllMs"],
  "attachments": len(d["attachments"]), "steps": steps}))'
  done
done
