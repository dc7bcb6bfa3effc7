#!/usr/bin/env bash
# The whole test suite, as run by CI: installs what it needs, then lints and tests every tier.
# Usage (as root on Debian 12): ./scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "test.sh: run as root (the netns and kernel tiers need it)" >&2; exit 1; }
./scripts/install-deps.sh test
export PATH="$HOME/.cargo/bin:$PATH"

export CARGO_TERM_COLOR=never
# A run builds once from scratch: incremental state would only cost disk (gigabytes) and time.
export CARGO_INCREMENTAL=0
echo "== rustfmt"
cargo fmt --all -- --check
# The Kubernetes tier's control plane is Go, in tests/ only; its build script finds Go or says
# how to get it, and the Rust tests of that tier run the binary it builds.
echo "== Kubernetes control plane (tests/k8s): build, gofmt, go vet"
./tests/k8s/build.sh
echo "== Multus thin plugin from tests/peers/multus (the CNI chain's real peer)"
./tests/k8s/build-multus.sh
command -v go >/dev/null || export PATH="/usr/local/go/bin:$PATH"
unformatted=$(gofmt -l tests/k8s)
[ -z "$unformatted" ] || { echo "gofmt: not formatted: $unformatted" >&2; exit 1; }
(cd tests/k8s && GOTOOLCHAIN=local go vet .)
# --- real nodes (tests/node) -------------------------------------------------------------------
echo "== node runtime (tests/node): containerd, its runc shim, ctr, the pause and busybox images"
./tests/node/build.sh
unformatted=$(gofmt -l tests/node)
[ -z "$unformatted" ] || { echo "gofmt: not formatted: $unformatted" >&2; exit 1; }
(cd tests/node && GOTOOLCHAIN=local go vet ./pause ./mkimage)
# --- end real nodes ------------------------------------------------------------------------------
echo "== manifests: kubernetes-validate for Kubernetes 1.33 (1.34 for DRA) and the newest it knows"
# In a virtual environment under target/ (no system pip). CRDs are validated as CRDs; objects
# of custom kinds (peers' and ours) are validated by the real API server in the netns tier.
venv=target/kubernetes-validate
[ -x "$venv/bin/kubernetes-validate" ] || {
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check kubernetes-validate==1.37.0
}
# The chart's templates are not YAML yet and deploy/monitoring holds Prometheus' own format;
# the chart's renderings are validated by tests/helm/test.sh.
mapfile -t manifests < <(find deploy -name '*.yaml' -not -path 'deploy/helm/*' -not -path 'deploy/monitoring/*' | sort)
# The DRA manifests (resource.k8s.io/v1) need 1.34 or newer: checked against 1.34 instead of 1.33.
mapfile -t dra < <(grep -l '^apiVersion: resource.k8s.io/v1$' "${manifests[@]}")
mapfile -t older < <(grep -L '^apiVersion: resource.k8s.io/v1$' "${manifests[@]}")
for version in 1.33.0 1.34.0 1.37.0; do
  case $version in
    1.33.0) checked=("${older[@]}") ;;
    1.34.0) checked=("${dra[@]}") ;;
    *) checked=("${manifests[@]}") ;;
  esac
  out=$("$venv/bin/kubernetes-validate" --strict --quiet -k "$version" "${checked[@]}" 2>&1) || {
    echo "$out" >&2; exit 1; }
  # Only the scheduler's own configuration file and the examples' peers' kinds (Multus's NAD,
  # Kubeflow's PyTorchJob: the real API server validates them in tests/helm/test.sh) are not
  # served kinds.
  unknown=$(echo "$out" | grep -v "kind \(KubeSchedulerConfiguration\|NetworkAttachmentDefinition\|PyTorchJob\)" | grep . || true)
  [ -z "$unknown" ] || { echo "kubernetes-validate $version: $unknown" >&2; exit 1; }
done
echo "== clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== unit and netns tests"
cargo test --workspace --locked
echo "== nothing the tests started is left behind"
# Every process a test starts names its sandbox (/run/spinel-test/...) on its command line;
# the sandboxes kill them when dropped and the control planes exit with their test process.
# Give those a few seconds, then fail naming whatever still runs or is still on disk.
for _ in $(seq 50); do
  left=$(pgrep -af /run/spinel-test || true)
  [ -z "$left" ] && break
  sleep 0.2
done
[ -z "$left" ] || { echo "processes the tests started are still running:" >&2; echo "$left" >&2; exit 1; }
# --- real nodes: a node's containers live in its cgroup, not in its namespaces -----------------
for _ in $(seq 50); do
  left=$(find /sys/fs/cgroup -maxdepth 2 -name 'spinel-test-*' 2>/dev/null || true)
  [ -z "$left" ] && break
  sleep 0.2
done
[ -z "$left" ] || { echo "node cgroups left behind:" >&2; echo "$left" >&2; exit 1; }
# --- end real nodes ------------------------------------------------------------------------------
stale=$(find /run/spinel-test -mindepth 1 -maxdepth 1 2>/dev/null || true)
[ -z "$stale" ] || { echo "sandboxes left behind:" >&2; echo "$stale" >&2; exit 1; }
echo "== installation: the Helm chart, deploy/ as its rendering, examples, alerts, dashboard"
# Helm, kubectl and the dashboard linter from the Go module proxy (cached, like the control plane).
./tests/helm/build.sh >/dev/null
./tests/helm/test.sh
echo "== the OCI image: reproducible, every binary's --version from it under podman"
./tests/image/test.sh
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
