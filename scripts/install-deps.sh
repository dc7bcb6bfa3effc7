#!/usr/bin/env bash
# Installs the Debian packages Spinel's demo ("demo") or test suite ("test") needs, skipping
# what is already there, so the README's quick start works on a fresh Debian 12 machine.
set -euo pipefail
want=(iproute2 iputils-ping containernetworking-plugins)
if [ "${1:-demo}" = test ]; then
  want+=(lldpd tcpdump arping strace hyperfine qemu-system-x86 linux-image-amd64 busybox-static
         cpio rdma-core graphviz)
fi
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
if ! command -v cargo >/dev/null; then
  [ -x "$HOME/.cargo/bin/cargo" ] || { echo "install-deps: installing Rust with rustup"; \
    curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal -c rustfmt,clippy; }
fi
