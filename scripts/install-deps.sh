#!/usr/bin/env bash
# Installs what Spinel's demo ("demo"), test suite ("test") or agent benchmark ("bench")
# needs, skipping what is already there, so the README's quick start works on a fresh Debian 12
# machine: Debian packages, and Rust (rustup into ~/.cargo) when no rustc of the workspace's
# minimum version is found.
# Callers put ~/.cargo/bin on their PATH themselves (a child cannot change its parent's).
set -euo pipefail
want=(iproute2 iputils-ping containernetworking-plugins curl ca-certificates gcc libc6-dev)
if [ "${1:-demo}" = test ]; then
  want+=(procps lldpd strace qemu-system-x86 linux-image-amd64 busybox-static graphviz ethtool)
  # SONiC YANG validation of rendered config_db.json (tests/peers/sonic-yang).
  want+=(libyang2-tools python3)
  # kubernetes-validate (PyPI) for the manifests, in a virtual environment.
  want+=(python3-venv)
  # The installation's tests (tests/helm, tests/image): promtool (Debian's prometheus) for the
  # alerting rules; podman (with runc: crun refuses hybrid cgroups) and skopeo to run and
  # inspect the image; musl-tools for its static binaries' C code (ring).
  want+=(prometheus podman runc skopeo musl-tools)
fi
if [ "${1:-demo}" = bench ]; then
  # The agent duties' baselines (scripts/bench-agent.sh): arping for the GARP script,
  # node_exporter as the counters exporter.
  want+=(procps iputils-arping prometheus-node-exporter)
  # The image's packaging beside podman's (scripts/bench-image.sh, which needs "test" too).
  want+=(hyperfine)
fi
# --- kernel tier: QEMU 10 from bookworm-backports (owner: CNI kernel tier, docs/kernel-tier.md) ---
# Debian 12's QEMU 7.2 has no igb (the 82576 with SR-IOV the SR-IOV kernel tier boots);
# bookworm-backports serves qemu-system-x86 1:10.0.x. Installed by name from there, with the
# backports source added when the machine has none.
if [ "${1:-demo}" = test ]; then
  qemu_version() { dpkg-query -W -f='${Version}' qemu-system-x86 2>/dev/null || true; }
  if ! dpkg --compare-versions "$(qemu_version)" ge 1:8.0 2>/dev/null; then
    if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
      echo "install-deps: adding Debian's bookworm-backports to the apt sources (for QEMU 10)"
      cat > /etc/apt/sources.list.d/bookworm-backports.sources <<'SOURCES'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
    fi
    echo "install-deps: installing qemu-system-x86 from bookworm-backports"
    apt-get update -qq
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        -t bookworm-backports qemu-system-x86 >/dev/null; then
      echo "install-deps: cannot install qemu-system-x86 from bookworm-backports; the SR-IOV" \
        "kernel tier (tests/kernel/tests/sriov.rs) needs QEMU 8.0 or newer for -device igb" >&2
      exit 1
    fi
  fi
fi
# --- end kernel tier ---
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# lldpd's package starts a daemon on every interface; tests run their own instances.
if systemctl is-active --quiet lldpd 2>/dev/null; then systemctl stop lldpd; systemctl disable --quiet lldpd || true; fi
# Likewise node_exporter's package starts one on :9100; the benchmark runs its own.
if systemctl is-active --quiet prometheus-node-exporter 2>/dev/null; then
  systemctl stop prometheus-node-exporter; systemctl disable --quiet prometheus-node-exporter || true
fi

# Rust: the workspace's rust-version or newer, with rustfmt and clippy. Debian 12's own cargo
# (1.63) is too old for edition 2024, so a rustc on PATH is checked, not just found.
min_rust=1.89.0
export PATH="$HOME/.cargo/bin:$PATH"
rust_ok() {
  local v
  v=$(rustc --version 2>/dev/null | awk '{print $2}') || return 1
  [ -n "$v" ] && [ "$(printf '%s\n%s\n' "$min_rust" "$v" | sort -V | head -1)" = "$min_rust" ]
}
if ! rust_ok; then
  if command -v rustup >/dev/null; then
    echo "install-deps: updating Rust to stable with rustup"
    rustup toolchain install stable --profile minimal -c rustfmt,clippy
    rustup default stable
  else
    echo "install-deps: installing Rust with rustup"
    # rustup-init decides what it is from its file name, so it keeps that name.
    dir=$(mktemp -d)
    curl -sSfL -o "$dir/rustup-init" https://static.rust-lang.org/rustup/dist/x86_64-unknown-linux-gnu/rustup-init
    chmod +x "$dir/rustup-init"
    "$dir/rustup-init" -y --no-modify-path --profile minimal -c rustfmt,clippy
    rm -rf "$dir"
  fi
fi
if [ "${1:-demo}" = test ] && ! { cargo fmt --version && cargo clippy --version; } >/dev/null 2>&1; then
  rustup component add rustfmt clippy
fi

# --- switch-config peers (switch-config/tests/peers.rs) -------------------------------------
# NVIDIA's NVUE schema per Cumulus Linux release (nvueschema) and Arista AVD's templates and
# schema (pyavd), pinned in switch-config/tests/peers/requirements.txt, in a virtual environment
# under target/ (about 110 MB, ten seconds); reinstalled only when the pins change.
if [ "${1:-demo}" = test ]; then
  root=$(cd "$(dirname "$0")/.." && pwd)
  peers="$root/target/switch-peers"
  pins="$root/switch-config/tests/peers/requirements.txt"
  if ! cmp -s "$pins" "$peers/requirements.txt" 2>/dev/null; then
    echo "install-deps: installing the switch-config peers into $peers"
    rm -rf "$peers"
    python3 -m venv "$peers"
    "$peers/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$pins"
    cp "$pins" "$peers/requirements.txt"
  fi
fi
# --- end switch-config peers ------------------------------------------------------------------

# --- installation tests (tests/helm, tests/image) -----------------------------------------------
# The prometheus package starts a server on :9090; the tests run promtool only. The image's
# binaries are built for Rust's musl target.
if [ "${1:-demo}" = test ]; then
  if systemctl is-active --quiet prometheus 2>/dev/null; then
    systemctl stop prometheus; systemctl disable --quiet prometheus || true
  fi
  rustup target list --installed | grep -qx x86_64-unknown-linux-musl \
    || rustup target add x86_64-unknown-linux-musl
fi
# --- end installation tests ---------------------------------------------------------------------

# --- real nodes (tests/node, tests/netns node tier) -----------------------------------------
# The node tier's OCI runtime is Debian's runc (containerd and the kubelet are built from Go
# modules by tests/node/build.sh and tests/k8s/build.sh); its test pods' image is Debian's
# static busybox (busybox-static, above).
if [ "${1:-demo}" = test ] && ! dpkg-query -W -f='${Status}' runc 2>/dev/null | grep -q 'install ok installed'; then
  echo "install-deps: installing runc"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends runc >/dev/null
fi
# --- end real nodes ----------------------------------------------------------------------------
