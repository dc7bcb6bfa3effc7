#!/usr/bin/env bash
# End-to-end `spinelctl topo infer` over the synthetic rail-optimised fabric written as one
# Spinel table file per system (what `spinelctl lldp listen --json` prints), warm page cache.
# Usage (from the repository root): ./topo-discovery/benches/end_to_end.sh [HOSTS] [RUNS] [-- ARGS]
#   HOSTS  hosts in the fabric (default 100000); RUNS  runs per case (default 5)
#   ARGS   `topo infer` arguments replacing the cases below (for one case of your own)
# Each case reports the best and median wall time, the median CPU time (user + system) and
# the largest peak RSS over the runs; the machine's load is printed, since on a shared machine
# only the best runs approach what the program itself costs.
set -euo pipefail
cd "$(dirname "$0")/../.."
hosts=${1:-100000}
runs=${2:-5}
shift $(( $# > 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
work=${SPINEL_BENCH_DIR:-${TMPDIR:-/tmp}/spinel-topo-e2e}
tables="$work/tables-$hosts"
cargo build --release --quiet -p spinelctl -p topo-discovery --bin spinelctl --example synthetic_tables
if [ ! -d "$tables" ]; then
  mkdir -p "$work"
  target/release/examples/synthetic_tables "$hosts" "$tables.tmp"
  mv "$tables.tmp" "$tables"
fi
find "$tables" -type f -exec cat {} + > /dev/null   # warm the page cache
bin=target/release/spinelctl

measure() { # measure NAME ARGS...
  local name=$1; shift
  local walls=() cpus=() rss=0
  for _ in $(seq "$runs"); do
    rm -rf "$work/out"
    /usr/bin/time -o "$work/time" -f '%e %U %S %M' \
      "$bin" topo infer "$tables" "$@" > /dev/null 2> "$work/stderr" || true
    if ! grep -q '^fabric:' "$work/stderr"; then cat "$work/stderr" >&2; exit 1; fi
    read -r wall user sys kib < "$work/time"
    walls+=("$wall"); cpus+=("$(echo "$user + $sys" | bc)")
    [ "$kib" -gt "$rss" ] && rss=$kib
  done
  local sorted_w sorted_c
  sorted_w=$(printf '%s\n' "${walls[@]}" | sort -n)
  sorted_c=$(printf '%s\n' "${cpus[@]}" | sort -n)
  printf '%-34s best %5.2f s  median %5.2f s  cpu %5.2f s  peak %4d MiB\n' "$name" \
    "$(head -1 <<< "$sorted_w")" "$(sed -n "$(( (runs + 1) / 2 ))p" <<< "$sorted_w")" \
    "$(sed -n "$(( (runs + 1) / 2 ))p" <<< "$sorted_c")" "$(( rss / 1024 ))"
}

echo "hosts $hosts, $(find "$tables" -type f | wc -l) files, $(du -sm "$tables" | cut -f1) MiB; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ $# -gt 0 ]; then
  measure "topo infer $*" "$@"
else
  measure "every output (--out-dir)" --out-dir "$work/out"
  for f in json labels hypernodes kueue slurm dot; do
    measure "--$f" "--$f"
  done
fi
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
