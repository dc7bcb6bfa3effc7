#!/usr/bin/env bash
# The whole test suite, as run by CI: installs what it needs, then lints and tests every tier.
# Usage (as root on Debian 12): ./scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "test.sh: run as root (the netns and kernel tiers need it)" >&2; exit 1; }
./scripts/install-deps.sh test
export PATH="$HOME/.cargo/bin:$PATH"

export CARGO_TERM_COLOR=never
echo "== rustfmt"
cargo fmt --all -- --check
# The Kubernetes tier's control plane is Go, in tests/ only; its build script finds Go or says
# how to get it, and the Rust tests of that tier run the binary it builds.
echo "== Kubernetes control plane (tests/k8s): build, gofmt, go vet"
./tests/k8s/build.sh
command -v go >/dev/null || export PATH="/usr/local/go/bin:$PATH"
unformatted=$(gofmt -l tests/k8s)
[ -z "$unformatted" ] || { echo "gofmt: not formatted: $unformatted" >&2; exit 1; }
(cd tests/k8s && GOTOOLCHAIN=local go vet .)
echo "== clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== unit and netns tests"
cargo test --workspace --locked
echo "== SONiC YANG validation of every rendered config_db.json"
yang=tests/peers/sonic-yang
"$yang/tools/selftest.sh" >/dev/null
rendered=$(mktemp -d)
trap 'rm -rf "$rendered"' EXIT
cargo run -q --locked -p spinelctl -- fabric render switch-config/examples/fabric-intent.yaml \
  --running switch-config/examples/running --out "$rendered"
for f in "$rendered"/*config_db*.json switch-config/examples/rendered/*config_db*.json \
         switch-config/examples/drifted/switches/*config_db*.json; do
  "$yang/validate.sh" -q "$f"
done
