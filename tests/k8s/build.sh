#!/usr/bin/env bash
# Builds spinel-k8s (a real kube-apiserver, kube-scheduler and etcd in one process, for the
# Kubernetes test tier) into $CARGO_TARGET_DIR/k8s/spinel-k8s (default target/k8s/spinel-k8s),
# where the Rust tests look for it. Idempotent: Go's module and build caches make a second run
# take seconds. Prints the binary's path.
# Usage: tests/k8s/build.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)

# Go lives in /usr/local/go/bin on the project's machines; a non-login shell may not have it.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
if ! command -v go >/dev/null 2>&1; then
  echo "tests/k8s/build.sh: \`go\` not found (also not in /usr/local/go/bin): install Go 1.26 or newer" >&2
  echo "  and put its bin directory on PATH; the Kubernetes test tier builds its control plane with it." >&2
  exit 1
fi
want=1.26
have=$(go env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -1)" != "$want" ]; then
  echo "tests/k8s/build.sh: Go $have is too old: k8s.io/kubernetes v1.36 needs Go $want or newer" >&2
  exit 1
fi
# Build with the Go found, never fetch another toolchain; go.sum must already cover everything.
export GOTOOLCHAIN=local GOFLAGS="${GOFLAGS:-} -mod=readonly"

out="${CARGO_TARGET_DIR:-$root/target}/k8s/spinel-k8s"
mkdir -p "$(dirname "$out")"
cd "$root/tests/k8s"
# Stamp the release into the binary as Kubernetes' own build does, so /version tells it.
version=$(awk '$1 == "k8s.io/kubernetes" { print $2 }' go.mod)
[[ $version =~ ^v([0-9]+)\.([0-9]+)\. ]] || { echo "build.sh: no k8s.io/kubernetes version in go.mod" >&2; exit 1; }
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=${BASH_REMATCH[1]} -X $pkg.gitMinor=${BASH_REMATCH[2]}"
done
# -s -w: no symbol tables, which halves the binary and the link time. (No -trimpath: it would
# key the build cache apart from `go vet`'s, and test.sh runs both.)
go build -ldflags="$ldflags" -o "$out" .
echo "$out"
