#!/usr/bin/env bash
# The image and the node's CNI installer: scripts/build-image.sh builds the image (cached by
# cargo), the OCI writer gives the same digest for the same binaries whatever their mtimes,
# Debian's podman runs every binary's --version from it, and `spinel-agent install-cni` (the
# image's own binaries) installs as the DaemonSet's init container does: twice, over a running
# plugin, into a read-only directory, with a bad settings key, over a newer plugin.
# As root. Usage: tests/image/test.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
work=$(mktemp -d /run/spinel-test.image.XXXXXX)
sleeper=""
cleanup() {
  [ -n "$sleeper" ] && kill "$sleeper" 2>/dev/null
  mountpoint -q "$work/ro" 2>/dev/null && umount "$work/ro"
  podman --root "$work/podman" --runroot "$work/podman-run" --storage-driver vfs rmi -a -f >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "tests/image/test.sh: $*" >&2; exit 1; }
pass=0
ok() { pass=$((pass + 1)); echo "ok - $*"; }

read -r ref digest archive < <(scripts/build-image.sh)
version=$(sed -n '/^\[workspace.package\]/,/^\[/{s/^version = "\(.*\)"/\1/p}' Cargo.toml)
[ "$ref" = "ghcr.io/spinel-dev/spinel:$version" ] || fail "the image is $ref"
bins="${CARGO_TARGET_DIR:-$root/target}/x86_64-unknown-linux-musl/release"
names=(spinel spinel-agent spinel-fabric-controller spinel-scheduler spinelctl)

# Reproducible: the same binaries, copied with other mtimes and in another order, same digest.
mkdir -p "$work/copy"
for b in "${names[@]}"; do cp "$bins/$b" "$work/copy/$b"; touch -d '2001-01-01' "$work/copy/$b"; done
epoch=$(git log -1 --format=%ct)
again=$(python3 scripts/oci-image.py --ref "$ref" --epoch "$epoch" --out "$work/again.tar" \
  --label org.opencontainers.image.title=spinel --label org.opencontainers.image.licenses=Apache-2.0 \
  --label org.opencontainers.image.revision="$(git rev-parse HEAD)$([ -z "$(git status --porcelain --untracked-files=no)" ] || echo -dirty)" \
  $(for b in spinel-scheduler spinelctl spinel spinel-agent spinel-fabric-controller; do echo "$work/copy/$b"; done))
[ "$again" = "$digest" ] || fail "same binaries, different digest: $digest then $again"
cmp -s "$archive" "$work/again.tar" || fail "same binaries, different archive bytes"
other=$(python3 scripts/oci-image.py --ref "$ref" --epoch $((epoch + 1)) --out "$work/other.tar" "$work"/copy/*)
[ "$other" != "$digest" ] || fail "another SOURCE_DATE_EPOCH gave the same digest"
skopeo inspect --raw "oci-archive:$archive" | grep -q '"schemaVersion":2' || fail "skopeo cannot read the archive"
ok "image $ref $digest is reproducible and readable by skopeo"

# podman: load the archive (no registry) and run each binary's --version, no network.
p=(podman --root "$work/podman" --runroot "$work/podman-run" --storage-driver vfs)
"${p[@]}" load -q -i "$archive" >/dev/null || fail "podman load"
for b in "${names[@]}"; do
  out=$("${p[@]}" run --rm --network none "$ref" "/usr/local/bin/$b" --version 2>&1) || fail "$b --version in the image: $out"
  grep -q "$version" <<<"$out" || fail "$b --version says $out"
done
ok "podman runs ${names[*]} --version from the image"

# install-cni, with the image's own binaries, as the init container runs it.
agent="$bins/spinel-agent"
mkdir -p "$work/bin" "$work/etc/spinel" "$work/cm"
chmod 755 "$work/etc/spinel"
echo '{"logLevel":"info","lockTimeoutMs":20000}' > "$work/cm/cni.json"
install() { "$agent" install-cni --source "$bins/spinel" --bin-dir "$work/bin" \
  --settings "$work/cm/cni.json" --settings-target "$work/etc/spinel/cni.json" --log-format text "$@"; }
install >/dev/null 2>&1 || fail "install-cni on an empty node"
cmp -s "$work/bin/spinel" "$bins/spinel" || fail "the plugin was not installed"
[ "$(stat -c %a:%u "$work/etc/spinel/cni.json")" = 644:0 ] || fail "the settings file is not root's 0644"
inode=$(stat -c %i "$work/bin/spinel")
out=$(install 2>&1) || fail "install-cni a second time: $out"
[ "$(stat -c %i "$work/bin/spinel")" = "$inode" ] || fail "a second run rewrote the same plugin"
grep -q "already installed" <<<"$out" || fail "a second run says: $out"
ok "install-cni twice: installed, then left alone"

# Over a plugin that is executing: an ELF running from the target path (writing into it would
# fail with ETXTBSY); the rename replaces it, and the running process keeps its file.
cp /bin/sleep "$work/bin/spinel"
"$work/bin/spinel" 60 & sleeper=$!
sleep 0.2
out=$(install 2>&1) || fail "install-cni over a running plugin: $out"
kill -0 "$sleeper" || fail "the running plugin died"
cmp -s "$work/bin/spinel" "$bins/spinel" || fail "the running plugin was not replaced"
ls -A "$work/bin" | grep -q '^\.spinel\.install' && fail "a temporary file was left behind"
kill "$sleeper"; sleeper=""
ok "install-cni over an executing plugin: replaced by rename, the process unharmed"

# A newer plugin is kept unless --force.
printf '#!/bin/sh\necho "spinel 99.0.0"\n' > "$work/bin/spinel"; chmod 755 "$work/bin/spinel"
out=$(install 2>&1) || fail "install-cni over a newer plugin: $out"
grep -q "spinel 99.0.0" "$work/bin/spinel" && grep -q "newer" <<<"$out" || fail "a newer plugin was not kept: $out"
install --force >/dev/null 2>&1 && cmp -s "$work/bin/spinel" "$bins/spinel" || fail "--force did not replace it"
ok "install-cni keeps a newer plugin, --force replaces it"

# A read-only target: a clear error, the old plugin untouched, no temporary file.
mkdir -p "$work/ro" && cp /bin/true "$work/ro/spinel"
mount --bind "$work/ro" "$work/ro" && mount -o remount,bind,ro "$work/ro"
out=$("$agent" install-cni --source "$bins/spinel" --bin-dir "$work/ro" --log-format text 2>&1) \
  && fail "install-cni into a read-only directory succeeded"
grep -qi "read-only" <<<"$out" || fail "the error does not say read-only: $out"
cmp -s "$work/ro/spinel" /bin/true || fail "the old plugin changed"
umount "$work/ro"
ok "install-cni into a read-only directory: an error naming it, nothing changed"

# A settings key the CNI does not know: the key named, nothing written (plugin or settings).
rm -f "$work/bin/spinel"; cp "$work/etc/spinel/cni.json" "$work/settings.before"
echo '{"stateDri":"/run/x"}' > "$work/cm/cni.json"
out=$(install 2>&1) && fail "install-cni accepted a bad settings key"
grep -q stateDri <<<"$out" || fail "the error does not name the key: $out"
[ ! -e "$work/bin/spinel" ] && cmp -s "$work/etc/spinel/cni.json" "$work/settings.before" || fail "something was written"
# And the real spinel refuses it too (the agent's schema is the CNI's).
chmod 644 "$work/cm/cni.json"
out=$(SPINEL_CNI_SETTINGS="$work/cm/cni.json" CNI_COMMAND=STATUS CNI_PATH=/usr/lib/cni "$bins/spinel" <<<'{"cniVersion":"1.1.0","name":"n","type":"spinel"}' || true)
grep -q stateDri <<<"$out" || fail "the CNI accepted what the installer refused: $out"
ok "install-cni with a bad settings key: named, nothing written; the CNI refuses it too"
echo "$pass passed, 0 failed"
