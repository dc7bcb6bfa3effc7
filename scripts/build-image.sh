#!/usr/bin/env bash
# Builds Spinel's one OCI image: every binary (spinel, spinel-agent, spinel-fabric-controller,
# spinel-scheduler, spinelctl) statically linked against musl, on an empty base (no base image
# is pulled from anywhere), tagged with the workspace version. Reproducible: the same source,
# toolchain and SOURCE_DATE_EPOCH give the same image digest (paths are remapped out of the
# binaries; scripts/oci-image.py writes sorted tar entries with fixed times and owners).
#
# Usage: scripts/build-image.sh [--print-ref]
#   Writes $CARGO_TARGET_DIR/image/spinel-VERSION.oci.tar (default target/...), an oci-archive;
#   prints "REFERENCE DIGEST ARCHIVE". --print-ref prints the reference only, building nothing.
# Environment:
#   SPINEL_IMAGE_REPOSITORY  default ghcr.io/spinel-dev/spinel (the name every manifest uses)
#   SOURCE_DATE_EPOCH        the image's timestamps; default: the last commit's time
# Load it with `podman load -i ARCHIVE`, push it with
# `skopeo copy oci-archive:ARCHIVE docker://REGISTRY/spinel:VERSION`, or import it on a node
# with `ctr -n k8s.io images import ARCHIVE`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$HOME/.cargo/bin:$PATH"

version=$(sed -n '/^\[workspace.package\]/,/^\[/{s/^version = "\(.*\)"/\1/p}' Cargo.toml)
[ -n "$version" ] || { echo "build-image.sh: no version in Cargo.toml [workspace.package]" >&2; exit 1; }
ref="${SPINEL_IMAGE_REPOSITORY:-ghcr.io/spinel-dev/spinel}:$version"
if [ "${1:-}" = --print-ref ]; then
  echo "$ref"
  exit 0
fi
[ $# -eq 0 ] || { echo "usage: scripts/build-image.sh [--print-ref]" >&2; exit 2; }

target=x86_64-unknown-linux-musl
rustup target list --installed 2>/dev/null | grep -qx "$target" || {
  echo "build-image.sh: the Rust target $target is missing: rustup target add $target" >&2
  echo "  (scripts/install-deps.sh test installs it, and musl-tools for ring's C code)" >&2
  exit 1
}
command -v musl-gcc >/dev/null || { echo "build-image.sh: musl-gcc is missing: apt-get install musl-tools" >&2; exit 1; }
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null) || {
    echo "build-image.sh: not a git checkout: set SOURCE_DATE_EPOCH" >&2; exit 1; }
fi
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || revision="$revision-dirty"

out_dir="${CARGO_TARGET_DIR:-$root/target}"
# Paths of this checkout and of the cargo registry would otherwise end up in panic messages
# and debug sections, and the image would depend on where it was built.
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
export RUSTFLAGS="--remap-path-prefix=$root=/spinel --remap-path-prefix=$cargo_home=/cargo -C target-feature=+crt-static"
export CC_x86_64_unknown_linux_musl=musl-gcc
packages=(spinel-cni spinel-agent spinel-fabric-controller spinel-scheduler spinelctl)
binaries=(spinel spinel-agent spinel-fabric-controller spinel-scheduler spinelctl)
cargo build --release --locked --target "$target" "${packages[@]/#/-p}" >&2
paths=()
for b in "${binaries[@]}"; do paths+=("$out_dir/$target/release/$b"); done

mkdir -p "$out_dir/image"
archive="$out_dir/image/spinel-$version.oci.tar"
digest=$(python3 scripts/oci-image.py --ref "$ref" --epoch "$SOURCE_DATE_EPOCH" --out "$archive" \
  --label org.opencontainers.image.title=spinel \
  --label org.opencontainers.image.licenses=Apache-2.0 \
  --label org.opencontainers.image.revision="$revision" \
  "${paths[@]}")
echo "$ref $digest $archive"
