#!/usr/bin/env bash
# Spinel's LLDP decoder side by side with lldpd's, on the same frame, in one run.
#
# Fetches the source of the lldpd Debian ships (apt-get source, through a private deb-src
# list: the machine's apt configuration is not touched), builds its daemon library, links
# lldpd_decode_bench.c against lldp_decode(), then runs it and the criterion benchmark.
#
# Usage (Debian 12, from the repository root): wire/benches/lldpd_peer/compare.sh
# Needs: gcc, make, and the Debian mirror. Set WORK to keep the build elsewhere than /tmp.
set -euo pipefail
cd "$(dirname "$0")/../../.."
repo=$PWD
work=${WORK:-/tmp/spinel-lldpd-peer}
frame=$repo/wire/fuzz/seeds/lldp_decode/switch-typical.bin
version=$(dpkg-query -W -f='${Version}' lldpd 2>/dev/null || echo 1.0.16-1+deb12u1)
upstream=${version%%-*}

mkdir -p "$work/apt/lists/partial"
if [ ! -x "$work/lldpd_decode_bench" ]; then
  echo "deb-src http://deb.debian.org/debian bookworm main" > "$work/apt/sources.list"
  apt_opts=(-o "Dir::Etc::SourceList=$work/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
            -o "Dir::State::Lists=$work/apt/lists")
  apt-get "${apt_opts[@]}" update -qq
  # --download-only: the .asc signature of the upstream tarball is absent on the mirror.
  (cd "$work" && apt-get "${apt_opts[@]}" source --download-only "lldpd=$version" || true)
  tar -C "$work" -xzf "$work/lldpd_${upstream}.orig.tar.gz"
  src=$work/lldpd-$upstream
  tar -C "$src" -xJf "$work"/lldpd_"$version".debian.tar.xz
  (cd "$src" && for p in $(cat debian/patches/series); do patch -p1 -s -N < "debian/patches/$p" || true; done)
  # The same protocol options as Debian's build (dot1, dot3, custom TLVs, LLDP-MED).
  (cd "$src" && ./configure -q --without-snmp --without-xml --without-readline --without-seccomp \
      --enable-dot1 --enable-dot3 --enable-custom --enable-lldpmed CFLAGS="-O2 -g" \
    && make -s -j"$(nproc)") > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
  gcc -O2 -I"$src" -I"$src/include" -I"$src/src" -I"$src/src/daemon" \
    -o "$work/lldpd_decode_bench" "$repo/wire/benches/lldpd_peer/lldpd_decode_bench.c" \
    "$src/src/daemon/.libs/liblldpd.a" "$src/src/.libs/libcommon-daemon-lib.a" \
    "$src/src/compat/.libs/libcompat.a" "$src/libevent/.libs/libevent.a"
fi

echo "== lldpd $version: lldp_decode() on $(basename "$frame")"
"$work/lldpd_decode_bench" "$frame" 5000000
echo "== spinel: cargo bench -p spinel-wire --bench lldp_decode"
cargo bench -p spinel-wire --bench lldp_decode -- --noplot 2>&1 | grep -E '^lldp_|time:|thrpt:'
