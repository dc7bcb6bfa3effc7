#!/usr/bin/env bash
# The image's build time (cold and warm), size and reproducibility, and its packaging step beside
# podman's (the peer doing the same work: the same static binaries onto an empty base).
#
#   1. a clone of HEAD at another path with an empty target directory: scripts/build-image.sh
#      from cold (every crate compiled), then again (warm: nothing changed);
#   2. scripts/build-image.sh in this checkout's own target directory;
#   3. the digests of 1 and 2 must be equal (same commit, other path, other target directory);
#   4. hyperfine: scripts/oci-image.py against `podman build --timestamp` of
#      `FROM scratch` + `COPY` of the same binaries (Debian's podman, vfs storage, no network).
#
# Usage (as root, clean checkout): scripts/bench-image.sh [RUNS]   (hyperfine runs, default 5)
# Writes nothing outside $CARGO_TARGET_DIR/bench-image (removed at the end but for the report).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
runs=${1:-5}
export PATH="$HOME/.cargo/bin:$PATH"
command -v hyperfine >/dev/null || { echo "bench-image.sh: hyperfine is missing: scripts/install-deps.sh bench" >&2; exit 1; }
command -v podman >/dev/null || { echo "bench-image.sh: podman is missing: scripts/install-deps.sh test" >&2; exit 1; }
[ -z "$(git status --porcelain --untracked-files=no)" ] \
  || { echo "bench-image.sh: commit first (the clone builds HEAD; a dirty tree has another revision label)" >&2; exit 1; }
target="${CARGO_TARGET_DIR:-$root/target}"
bench="$target/bench-image"
rm -rf "$bench"
mkdir -p "$bench"
podman_store=(--root "$bench/podman" --runroot "$bench/podman-run" --storage-driver vfs)
cleanup() {
  podman "${podman_store[@]}" rmi -a -f >/dev/null 2>&1 || true
  rm -rf "$bench/src" "$bench/podman" "$bench/podman-run" "$bench/context"
}
trap cleanup EXIT
seconds() { local t0=$1; echo "$(( $(date +%s%N) / 1000000 - t0 ))" | awk '{printf "%.1f", $1 / 1000}'; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

echo "== clone of $(git rev-parse --short HEAD) at $bench/src"
git clone -q "$root" "$bench/src"
git -C "$bench/src" checkout -q "$(git rev-parse HEAD)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(now_ms)
build() { # DIR: scripts/build-image.sh there, into DIR/target unless DIR is this checkout
  local out
  out=$(cd "$1" && scripts/build-image.sh 2>"$bench/build.log") \
    || { tail -20 "$bench/build.log" >&2; echo "bench-image.sh: the build in $1 failed" >&2; exit 1; }
  echo "$out"
}
out=$(CARGO_TARGET_DIR="$bench/src/target" build "$bench/src")
cold=$(seconds "$t0")
read -r ref cold_digest cold_archive <<<"$out"
t0=$(now_ms)
out=$(CARGO_TARGET_DIR="$bench/src/target" build "$bench/src")
warm=$(seconds "$t0")
read -r _ warm_digest _ <<<"$out"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
out=$(build "$root")
read -r _ here_digest here_archive <<<"$out"
[ -n "$cold_digest" ] && [ "$cold_digest" = "$warm_digest" ] && [ "$cold_digest" = "$here_digest" ] || {
  echo "bench-image.sh: NOT reproduced: clone cold $cold_digest, clone warm $warm_digest, here $here_digest" >&2
  exit 1
}
cmp -s "$cold_archive" "$here_archive" || { echo "bench-image.sh: same digest, different archives" >&2; exit 1; }

bins="$target/x86_64-unknown-linux-musl/release"
names=(spinel spinel-agent spinel-fabric-controller spinel-scheduler spinelctl)
layer=$(python3 - "$here_archive" <<'EOF'
import json, sys, tarfile
t = tarfile.open(sys.argv[1])
index = json.load(t.extractfile("index.json"))
blob = lambda d: "blobs/sha256/" + d["digest"].split(":")[1]
manifest = json.load(t.extractfile(blob(index["manifests"][0])))
print(manifest["layers"][0]["size"])
EOF
)
echo
echo "image $ref"
echo "digest $here_digest (clone at another path, cold and warm, and this checkout: equal)"
echo "build: cold ${cold}s, warm ${warm}s (scripts/build-image.sh, wall clock)"
echo "archive $(stat -c %s "$here_archive") bytes; layer (gzip) $layer bytes; binaries (uncompressed):"
for b in "${names[@]}"; do printf '  %-26s %s\n' "$b" "$(stat -c %s "$bins/$b")"; done

echo
echo "== packaging the same binaries: oci-image.py vs podman build (FROM scratch)"
mkdir -p "$bench/context"
for b in "${names[@]}"; do cp "$bins/$b" "$bench/context/$b"; done
{
  echo "FROM scratch"
  for b in "${names[@]}"; do echo "COPY $b /usr/local/bin/$b"; done
  echo 'ENV PATH=/usr/local/bin'
} > "$bench/context/Containerfile"
epoch=$(git log -1 --format=%ct)
hyperfine --runs "$runs" --warmup 1 --export-markdown "$bench/packaging.md" \
  -n oci-image.py "python3 scripts/oci-image.py --ref $ref --epoch $epoch --out $bench/oci.tar ${names[*]/#/$bench/context/}" \
  -n 'podman build' "podman ${podman_store[*]} build -q --network none --timestamp $epoch -t bench -f $bench/context/Containerfile $bench/context && rm -f $bench/podman.tar && podman ${podman_store[*]} save -q --format oci-archive -o $bench/podman.tar bench"
echo "podman's oci-archive: $(stat -c %s "$bench/podman.tar") bytes; oci-image.py's: $(stat -c %s "$bench/oci.tar") bytes"
first=$(podman "${podman_store[@]}" image inspect --format '{{.Digest}}' bench)
podman "${podman_store[@]}" build -q --network none --timestamp "$epoch" -t bench2 -f "$bench/context/Containerfile" "$bench/context" >/dev/null
second=$(podman "${podman_store[@]}" image inspect --format '{{.Digest}}' bench2)
echo "podman build --timestamp twice: $first / $second"
