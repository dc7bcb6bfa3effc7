#!/usr/bin/env bash
# Builds the node tier's runtime into $CARGO_TARGET_DIR/node (default target/node), where the
# Rust harness (tests/netns/src/kube_node.rs) looks for it:
#   containerd, containerd-shim-runc-v2, ctr  containerd v2.4.2 from the Go module proxy
#                                             (go.mod's tool directives), as upstream builds
#                                             them for Linux without btrfs, devmapper and zfs
#   pause.oci.tar     the pod sandbox image: tests/node/pause, static, on an empty base
#   busybox.oci.tar   test pods' image: Debian's static busybox (busybox-static) on an empty base
# runc and the CNI plugins are Debian's (scripts/install-deps.sh test). The kubelet is
# `spinel-k8s kubelet` (tests/k8s/build.sh). Idempotent: Go's caches make a second run take
# seconds, and an image is rewritten only when its inputs changed. Prints the directory.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null 2>&1 || { echo "tests/node/build.sh: \`go\` not found: install Go 1.26 or newer" >&2; exit 1; }
busybox=/bin/busybox
[ -x "$busybox" ] && ! ldd "$busybox" >/dev/null 2>&1 || {
  echo "tests/node/build.sh: no static $busybox: apt-get install busybox-static (./scripts/install-deps.sh test)" >&2
  exit 1
}
export GOTOOLCHAIN=local GOFLAGS="${GOFLAGS:-} -mod=readonly" CGO_ENABLED=0
out="${CARGO_TARGET_DIR:-$root/target}/node"
mkdir -p "$out"
cd "$root/tests/node"

version=$(awk '$1 == "github.com/containerd/containerd/v2" { print $2 }' go.mod)
[ -n "$version" ] || { echo "build.sh: no containerd version in go.mod" >&2; exit 1; }
go build -tags "no_btrfs no_devmapper no_zfs" -trimpath \
  -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=${version#v}" -o "$out/" \
  github.com/containerd/containerd/v2/cmd/containerd \
  github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
  github.com/containerd/containerd/v2/cmd/ctr
go build -trimpath -ldflags "-s -w" -o "$out/pause" ./pause
go build -trimpath -o "$out/mkimage" ./mkimage

# image NAME REF ARGS...: writes $out/NAME.oci.tar unless its inputs are unchanged.
image() {
  local name=$1 ref=$2
  shift 2
  local stamp
  stamp=$( { echo "$ref $*"; sha256sum "$out/mkimage" "$@" 2>/dev/null || true; } | sha256sum | cut -d' ' -f1)
  if [ "$(cat "$out/$name.stamp" 2>/dev/null)" != "$stamp" ] || [ ! -f "$out/$name.oci.tar" ]; then
    "$out/mkimage" --ref "$ref" --out "$out/$name.oci.tar" "${image_args[@]}"
    echo "$stamp" > "$out/$name.stamp"
  fi
}
image_args=(--entrypoint /pause --file "/pause=$out/pause")
image pause spinel.test/pause:1 "$out/pause"
image_args=(--entrypoint /bin/sh --env PATH=/bin --file "/bin/busybox=$busybox")
for applet in sh ip ping sleep cat ls ps kill nc; do image_args+=(--symlink "/bin/$applet=busybox"); done
image busybox spinel.test/busybox:1 "$busybox"
echo "$out"
