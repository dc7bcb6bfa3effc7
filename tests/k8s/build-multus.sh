#!/usr/bin/env bash
# Builds the Multus thin plugin (cmd/multus) from the source archive in tests/peers/multus into
# $CARGO_TARGET_DIR/k8s/multus (default target/k8s/multus), and leaves the unpacked source
# (its deployments/ hold the NetworkAttachmentDefinition CRD and RBAC) in
# $CARGO_TARGET_DIR/k8s/multus-src. The Go module proxy serves every module Multus needs, not
# Multus itself, hence the archive. Idempotent: unpacks again only when the archive changed, and
# Go's caches make a second build take seconds. Prints the binary's path.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null 2>&1 || { echo "build-multus.sh: \`go\` not found: install Go 1.26 or newer" >&2; exit 1; }
export GOTOOLCHAIN=local

archive="$root/tests/peers/multus/multus-cni-95a0932.tar.gz"
out_dir="${CARGO_TARGET_DIR:-$root/target}/k8s"
src="$out_dir/multus-src"
stamp=$(sha256sum "$archive" | cut -d' ' -f1)
if [ "$(cat "$src/.archive-sha256" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$src"
  mkdir -p "$src"
  tar -xzf "$archive" -C "$src"
  echo "$stamp" > "$src/.archive-sha256"
fi
# The archive's go.sum covers every module; nothing else is fetched.
(cd "$src" && GOFLAGS="-mod=readonly" go build -ldflags="-s -w" -o "$out_dir/multus" ./cmd/multus)
echo "$out_dir/multus"
