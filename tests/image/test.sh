#!/usr/bin/env bash
# The image: scripts/build-image.sh builds it (cargo's cache makes a rebuild cheap), the OCI
# writer gives the same digest for the same binaries whatever their mtimes and order, Debian's
# podman runs every binary's --version from it, and the DaemonSet's init container from it.
# As root. Usage: tests/image/test.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
work=$(mktemp -d /run/spinel-test.image.XXXXXX)
cleanup() {
  podman --root "$work/podman" --runroot "$work/podman-run" --storage-driver vfs --runtime runc rmi -a -f >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "tests/image/test.sh: $*" >&2; exit 1; }
pass=0
ok() { pass=$((pass + 1)); echo "ok - $*"; }

built=$(scripts/build-image.sh) || fail "scripts/build-image.sh failed"
read -r ref digest archive <<<"$built"
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
# runc, not crun: crun refuses hybrid cgroup hierarchies (v1 controllers beside a v2 mount, as
# on the development machine). Explicit limits: by default podman raises RLIMIT_NOFILE and
# RLIMIT_NPROC in the container, which needs CAP_SYS_RESOURCE, which root lacks there.
p=(podman --root "$work/podman" --runroot "$work/podman-run" --storage-driver vfs --runtime runc)
limits=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
"${p[@]}" load -q -i "$archive" >/dev/null || fail "podman load"
for b in "${names[@]}"; do
  out=$("${p[@]}" run --rm --network none "${limits[@]}" "$ref" "/usr/local/bin/$b" --version 2>&1) || fail "$b --version in the image: $out"
  grep -q "$version" <<<"$out" || fail "$b --version says $out"
done
ok "podman runs ${names[*]} --version from the image"

# The DaemonSet's init container as deploy/agent/daemonset.yaml writes it (command, root user,
# read-only root file system, no capability, no privilege escalation), from the image under
# podman with the node's directories mounted: the plugin and the settings land on the "node".
# (The installer's cases are Rust tests: tests/netns/tests/agent_install_cni.rs.)
mapfile -t init < <(python3 - deploy/agent/daemonset.yaml <<'EOF'
import sys, yaml
for doc in yaml.safe_load_all(open(sys.argv[1])):
    if doc and doc["kind"] == "DaemonSet":
        c = doc["spec"]["template"]["spec"]["initContainers"][0]
        sc = c["securityContext"]
        want = {"runAsUser": 0, "readOnlyRootFilesystem": True,
                "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
        if sc != want:
            sys.exit(f"the init container's securityContext changed: {sc}; update this test")
        print("\n".join(c["command"]))
EOF
)
[ ${#init[@]} -gt 2 ] || fail "no init container command in deploy/agent/daemonset.yaml"
node="$work/node"
mkdir -p "$node/cni-bin" "$node/etc-spinel" "$node/configmap"
chmod 755 "$node/cni-bin" "$node/etc-spinel"
echo '{"logLevel":"info","lockTimeoutMs":20000}' > "$node/configmap/cni.json"
out=$("${p[@]}" run --rm --network none "${limits[@]}" --read-only --user 0 --cap-drop ALL \
  --security-opt no-new-privileges \
  -v "$node/cni-bin:/host/cni/bin" -v "$node/etc-spinel:/host/etc/spinel" \
  -v "$node/configmap:/etc/spinel-cni:ro" "$ref" "${init[@]}" 2>&1) || fail "the init container failed: $out"
cmp -s "$node/cni-bin/spinel" "$bins/spinel" || fail "the init container did not install the image's spinel: $out"
[ "$(stat -c %a:%u "$node/etc-spinel/cni.json")" = 644:0 ] && cmp -s "$node/etc-spinel/cni.json" "$node/configmap/cni.json" \
  || fail "the init container did not write the settings as root's 0644: $out"
ok "the DaemonSet's install-cni init container runs from the image: plugin and settings on the node"
echo "$pass passed, 0 failed"
