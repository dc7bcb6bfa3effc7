#!/usr/bin/env bash
# Builds Helm (helm.sh/helm/v3/cmd/helm, pinned in go.mod beside this script) from the Go module
# proxy into $CARGO_TARGET_DIR/k8s/helm (default target/k8s/helm), stamped as Helm's own
# Makefile stamps it (its version and the Kubernetes version its client-go speaks). Also takes
# the peers' CRDs the chart's optional objects and the examples need from their Go modules into
# $CARGO_TARGET_DIR/k8s/peer-crds: the Prometheus operator's PrometheusRule and PodMonitor,
# Kubeflow's PyTorchJob. Idempotent: Go's module and build caches make a second run take
# seconds; nothing but Go modules is fetched. Prints helm's path. Also builds kubectl and
# dashlint (this directory's commands) beside it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null 2>&1 || { echo "tests/helm/build.sh: \`go\` not found: install Go 1.26 or newer" >&2; exit 1; }
export GOTOOLCHAIN=local GOFLAGS="${GOFLAGS:-} -mod=readonly"

out_dir="${CARGO_TARGET_DIR:-$root/target}/k8s"
mkdir -p "$out_dir/peer-crds"
cd "$root/tests/helm"
helm_version=$(go list -m -f '{{.Version}}' helm.sh/helm/v3)
client_go=$(go list -m -f '{{.Version}}' k8s.io/client-go)
[[ $client_go =~ ^v0\.([0-9]+)\. ]] || { echo "build.sh: no k8s.io/client-go version" >&2; exit 1; }
k8s_minor=${BASH_REMATCH[1]}
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
done
go build -ldflags="$ldflags" -o "$out_dir/helm" helm.sh/helm/v3/cmd/helm
# kubectl (k8s.io/kubectl, the version Helm pins) for the README's install commands, and the
# Grafana dashboard linter over the Grafana Foundation SDK's dashboard schema.
go build -ldflags="-s -w" -o "$out_dir/kubectl" ./kubectl
go build -ldflags="-s -w" -o "$out_dir/dashlint" ./dashlint

# Peers' CRDs, verified against go.sum's checksum database like any module.
crd() { # MODULE@VERSION PATH-IN-MODULE
  local dir
  dir=$(GOFLAGS=-mod=mod go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -f "$dir/$2" ] || { echo "build.sh: $1 has no $2" >&2; exit 1; }
  cp "$dir/$2" "$out_dir/peer-crds/$(basename "$2")"
}
crd github.com/prometheus-operator/prometheus-operator@v0.85.0 example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml
crd github.com/prometheus-operator/prometheus-operator@v0.85.0 example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml
crd github.com/kubeflow/training-operator@v1.8.1 manifests/base/crds/kubeflow.org_pytorchjobs.yaml
echo "$out_dir/helm"
