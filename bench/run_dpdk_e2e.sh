#!/usr/bin/env bash
# The DPDK fabric end to end: `fabemu run --fabric dpdk` on an 8-rank all_to_all (generated here), as fast as
# possible (--dilation 0), on the in-process ring pair with the receive side on lcore 1 (EAL -l 0-1, no
# hugepages), ROUNDS times. Each round prints the run's wall time (the DPDK section's "wall"), its data
# frames and data frames per second, its NACKs and the receive lcore's polls, then the median rate. What
# the bench_dpdk_tx loop measures is the transmit loop alone on one core; this is what the whole fabric
# (walker, senders, receive lcore, reassembly, ACK/NACK) moves between two cores. On the ring pair the
# receive side does not sum the payloads again by default (--dpdk-verify-checksums auto): pass
# --dpdk-verify-checksums on to measure with the checks every other device gets (rates before 2026-12-03
# afternoon were taken that way). host/dpdk/README.md, "End to end".
#
# usage: bench/run_dpdk_e2e.sh [BUILD_DIR] [ROUNDS] [SIZE] [fabemu run options...]
#   BUILD_DIR defaults to build, ROUNDS to 3, SIZE (bytes per rank of the all_to_all) to 256MB; further
#   arguments go to `fabemu run` (e.g. --roce, --wire-mtu 9000).
# BUSY=1: a busy loop pinned to CPU 0 (the main lcore's) for the whole run: the fabric sharing its core.
# COUNT=N: N all_to_alls one after the other (default 1). Small messages: SIZE 4KB and COUNT=4000 give
#   512,000 one-packet messages of 512 B, each collective waiting for the one before (the dependency
#   chain's round trips; the data frames per second are then messages per second). Each round also prints
#   the median wire latency (first frame sent to message reassembled).
set -euo pipefail

build=${1:-build}
rounds=${2:-3}
size=${3:-256MB}
shift $(( $# < 3 ? $# : 3 ))
fabemu="$build/host/fabemu"
[[ -x "$fabemu" ]] || { echo "run_dpdk_e2e.sh: $fabemu not built (cmake --build $build --target fabemu)" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
fabric="$here/../traces/samples/fabric_2d.yaml"

work=$(mktemp -d /tmp/fabemu-dpdk-e2e-XXXXXX)
busy_pid=""
cleanup() {
  [[ -n "$busy_pid" ]] && kill "$busy_pid" 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
"$fabemu" trace generate collective --type all_to_all -n 8 --size "$size" --count "${COUNT:-1}" \
  -o "$work/a2a/a2a" > /dev/null
if [[ "${BUSY:-0}" == 1 ]]; then
  taskset -c 0 sh -c 'while :; do :; done' &
  busy_pid=$!
fi

rates=()
for ((r = 1; r <= rounds; ++r)); do
  out=$("$fabemu" run -w "$work/a2a/a2a" -f "$fabric" --fabric dpdk --as-fast-as-possible "$@" -- \
          -l 0-1 --no-huge -m 1024 --no-pci --no-shconf --file-prefix "e2e$$" --no-telemetry 2>&1) || {
    echo "$out" >&2
    exit 1
  }
  wall=$(grep -o 'wall [0-9.]* ms' <<< "$out" | awk '{print $2}')
  data=$(grep 'frames sent' <<< "$out" | grep -o '[0-9]* data' | awk '{print $1}')
  nacks=$(grep 'frames sent' <<< "$out" | grep -o 'ACK, [0-9]* NACK' | awk '{print $2}')
  # No receive lcore (--dpdk-rx-lcore off, one lcore): no receive polls line; an empty value, not an exit.
  polls=$(grep -o 'frames in [0-9]* polls' <<< "$out" | awk '{print $3}' || true)
  latency=$(grep 'wire latency' <<< "$out" | grep -o 'median [0-9]*' | awk '{print $2}' || true)
  rate=$(awk -v d="$data" -v w="$wall" 'BEGIN { printf "%.2f", d / w / 1000 }')
  rates+=("$rate")
  printf 'round %d: wall %8.1f ms, %d data frames, %s M data frames/s, %d NACKs, %s receive polls, median wire latency %s ns\n' \
    "$r" "$wall" "$data" "$rate" "$nacks" "${polls:-?}" "${latency:-?}"
done
printf '%s\n' "${rates[@]}" | sort -g | awk '{ v[NR] = $1 } END { printf "median %s M data frames/s over %d rounds\n", v[int((NR + 1) / 2)], NR }'
