#!/bin/bash
# Captures what iproute2's `rdma` tool sends, and what the kernel answers, for each request
# hostnet's RDMA netlink code makes. The result is hostnet/tests/fixtures/rdma/<name>.strace:
# strace's hex dumps of every netlink datagram (`-e write=all -e read=all`), with `#` comment
# lines giving the command, its exit status and its output. hostnet's unit tests parse these
# files and compare our encoder with iproute2 byte for byte, and decode the kernel's replies.
#
# Usage, as root on the host, from anywhere in the repository:
#   tests/kernel/capture-rdma-fixtures.sh
# It boots the kernel tier's VM (Debian's kernel, rdma_rxe on a virtio NIC) and runs the
# captures there with the host's own iproute2 and strace (the host root is the VM's root).
set -euo pipefail

if [ "${1:-}" != --in-vm ]; then
  cd "$(dirname "$0")/../.."
  out=hostnet/tests/fixtures/rdma
  cargo build -q -p spinel-kernel-tests --bin spinel-vm
  mkdir -p "$out"
  tmp=$(mktemp)
  ./target/debug/spinel-vm --nics 2 -- /bin/bash "$PWD/tests/kernel/capture-rdma-fixtures.sh" --in-vm >"$tmp"
  rm -f "$out"/*.strace
  awk -v dir="$out" '/^=== /{f = dir "/" $2 ".strace"; next} f {print > f}' "$tmp"
  rm -f "$tmp"
  ls "$out"
  exit 0
fi

# In the VM from here on.
cap() {
  local name=$1 status=0
  shift
  echo "=== $name"
  echo "# command: $*"
  echo "# $(rdma -V) ($(strace -V | head -1)), kernel $(uname -r)"
  strace -o /tmp/trace -e trace=sendto,sendmsg,recvfrom,recvmsg -e write=all -e read=all \
    -xx -s 4096 "$@" >/tmp/output 2>&1 || status=$?
  echo "# exit status: $status"
  awk '{print "# output: " $0}' /tmp/output
  cat /tmp/trace
}

ip link set eth0 up
ip link set eth1 up
cap link-add rdma link add rxe0 type rxe netdev eth0
rdma link add rxe1 type rxe netdev eth1
cap link-delete rdma link delete rxe1
cap system-show rdma system show
cap dev-show rdma dev show
cap dev-show-rxe0 rdma dev show rxe0
cap link-show rdma link show
cap link-show-rxe0-1 rdma link show rxe0/1
cap system-set-exclusive rdma system set netns exclusive
cap system-show-exclusive rdma system show
cap system-set-shared rdma system set netns shared
# Exclusive mode, so that the move reaches the driver check; the mode may only change while
# no other namespace exists, hence before `ip netns add`.
rdma system set netns exclusive
ip netns add ns1
cap dev-set-netns rdma dev set rxe0 netns ns1
