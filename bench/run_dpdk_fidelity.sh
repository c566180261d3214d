#!/usr/bin/env bash
# How closely the DPDK fabric keeps the target's schedule (its pacing fidelity) against the dilation, with
# build-ahead (--dpdk-ahead, default 20 us) and without it (--dpdk-ahead 0): `fabemu run --fabric dpdk` on a
# workload generated here, on the in-process ring pair, for each dilation and each ahead value, ROUNDS
# times, alternated (ahead values inner, so both see the same minutes of a shared machine). Each run's JSON
# report gives the median of achieved / target rate over the busy periods no stall disturbed
# (dpdk.pacing_median_ratio; the fidelity line's kept-pace bar is 0.99), the departure error's median (wall
# ns, dpdk.jitter_ns) and the frames built ahead (dpdk.frames_ahead). Prints a markdown table with each
# cell's range over the rounds. host/dpdk/README.md, "Build-ahead".
#
# The default workload is the sparse one: 40 all_to_alls of 4 KB on 8 ranks (one-frame messages of 512 B;
# a collective's messages all due at once on 24 first links) on traces/samples/fabric_2d.yaml.
# WORKLOAD=quickstart: the quick-start sample instead (traces/samples/mlp8_data_parallel.txt, 8 ranks,
# steady streams of full frames).
#
# usage: bench/run_dpdk_fidelity.sh [BUILD_DIR] [ROUNDS] [DILATIONS] [AHEADS] [fabemu run options...]
#   BUILD_DIR defaults to build, ROUNDS to 2, DILATIONS (comma list) to 1000,2000,4000,8000 (100,200 for
#   the quick-start sample), AHEADS (comma list of --dpdk-ahead us) to 0,20; further arguments go to
#   `fabemu run` (e.g. --roce, or EAL arguments after --: -- --no-huge -m 512 --no-pci -l 0-1 for a
#   receive lcore).
set -euo pipefail

build=${1:-build}
rounds=${2:-2}
workload=${WORKLOAD:-sparse}
case "$workload" in
  sparse) default_dilations=1000,2000,4000,8000 ;;
  quickstart) default_dilations=100,200 ;;
  *) echo "run_dpdk_fidelity.sh: WORKLOAD is sparse or quickstart, not $workload" >&2; exit 1 ;;
esac
dilations=${3:-$default_dilations}
aheads=${4:-0,20}
shift $(( $# < 4 ? $# : 4 ))
fabemu="$build/host/fabemu"
[[ -x "$fabemu" ]] || { echo "run_dpdk_fidelity.sh: $fabemu not built (cmake --build $build --target fabemu)" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
fabric="$here/../traces/samples/fabric_2d.yaml"

work=$(mktemp -d /tmp/fabemu-dpdk-fidelity-XXXXXX)
trap 'rm -rf "$work"' EXIT
if [[ "$workload" == sparse ]]; then
  "$fabemu" trace generate collective --type all_to_all -n 8 --size 4KB --count 40 -o "$work/w/a2a" > /dev/null
  traces="$work/w/a2a"
else
  "$fabemu" trace convert --from astra-text --ranks 8 "$here/../traces/samples/mlp8_data_parallel.txt" \
    "$work/w/mlp" > /dev/null
  traces="$work/w/mlp"
fi

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, workload $workload"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
IFS=, read -r -a ds <<< "$dilations"
IFS=, read -r -a as <<< "$aheads"
for ((r = 1; r <= rounds; r++)); do
  for d in "${ds[@]}"; do
    for a in "${as[@]}"; do
      "$fabemu" run -w "$traces" -f "$fabric" --fabric dpdk --dilation "$d" --dpdk-ahead "$a" \
        -r "$work/r_${d}_${a}_${r}.json" "$@" > "$work/out" 2>&1 || { cat "$work/out" >&2; exit 1; }
      echo "# round $r, --dilation $d --dpdk-ahead $a done" >&2
    done
  done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work" "$rounds" "$dilations" "$aheads" << 'EOF'
import json, pathlib, sys
work, rounds = pathlib.Path(sys.argv[1]), int(sys.argv[2])
ds, aheads = sys.argv[3].split(","), sys.argv[4].split(",")

def span(xs, fmt):
    lo, hi = min(xs), max(xs)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else fmt.format(lo) + "-" + fmt.format(hi)

print()
print("| --dilation | --dpdk-ahead (us) | busy-period ratio (median, undisturbed) | departure error median (us, wall) | frames built ahead |")
print("|---|---|---|---|---|")
for d in ds:
    for a in aheads:
        runs = [json.load(open(work / f"r_{d}_{a}_{r}.json"))["dpdk"] for r in range(1, rounds + 1)]
        ratio = [x["pacing_median_ratio"] for x in runs]
        err = [x["jitter_ns"]["p50"] / 1000 for x in runs]
        ahead = [x["frames_ahead"] / max(1, x["data_frames"]) for x in runs]
        print(f"| {d} | {a} | {span(ratio, '{:.3f}')} | {span(err, '{:.2f}')} | {span(ahead, '{:.0%}')} |")
EOF
