#!/usr/bin/env bash
# Scaling of fabemu against ASTRA-sim's published numbers (docs: REFERENCE.md, "Scaling of ASTRA-sim"):
# data-parallel ResNet-50, one training pass, Ring 50 GB/s 500 ns, system_ring_4chunks.json, at 64,
# 256 and 1024 ranks; analytical model in closed form and message by message, packet model; then a
# 16,384-rank run made with `fabemu trace convert --from astra-text`. Prints markdown tables.
#
#   bench/run_scaling.sh [FABEMU_BINARY [SHARED_DIR]]
#     FABEMU_BINARY  default: build/host/fabemu (relative to the repo)
#     SHARED_DIR     default: ../shared relative to the repo (traces/astra-sim-text, configs/astra-sim)
#   Environment: WALK_LIMIT_S (default 120): skip the message-by-message run at 1024 ranks when the
#   one at 256 ranks took longer than WALK_LIMIT_S / 4 (it grows ~4x per 4x ranks), and stop any
#   message-by-message run after WALK_LIMIT_S * 2; SKIP_16K=1 skips the 16,384-rank run.
#   ASTRA_SIM_BIN: ASTRA-sim 2.x's congestion-unaware analytical binary (AstraSim_Analytical_Congestion_
#   Unaware). Given, it runs on the same inputs in this run, right before fabemu's closed-form run, and the
#   speed-up is against that wall time (ASTRA_SIM_LIMIT_S, default 900, stops it). Without it the ASTRA-sim
#   columns are REFERENCE.md's published figures, from another machine and day: the table says so, and
#   its ratio is not a measured speed-up (it overstated ~2.5x against a side-by-side run on 2026-12-05).
#
# Wall time and peak RSS come from /usr/bin/time -f; emulated and exposed time from --report JSON.
# Everything goes to a temp dir that is removed on exit, so the script is safe to run twice.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fabemu=${1:-$repo/build/host/fabemu}
shared=${2:-$repo/../shared}
walk_limit=${WALK_LIMIT_S:-120}

[[ -x $fabemu ]] || { echo "run_scaling.sh: no fabemu binary at $fabemu (pass it as the first argument)" >&2; exit 2; }
source "$(dirname "${BASH_SOURCE[0]}")/astra_text_lib.sh"
astra_text_setup run_scaling.sh

# measure NAME TIMEOUT_S fabemu-run-args... -> sets wall_s, cpu_s, rss_mib, total_ns, exposed_ns (or "-")
measure() {
  local name=$1 limit=$2; shift 2
  local report=$tmp/$name.json tf=$tmp/$name.time rc=0
  wall_s=- cpu_s=- rss_mib=- total_ns=- exposed_ns=-
  /usr/bin/time -f '%e %M %U %S' -o "$tf" timeout "$limit" "$fabemu" run --quiet --report "$report" "$@" \
    >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
  if [[ $rc -ne 0 ]]; then
    if [[ $rc -eq 124 ]]; then wall_s=">$limit"; else
      echo "run_scaling.sh: $name failed (exit $rc):" >&2; tail -5 "$tmp/$name.err" >&2
    fi
    return 0
  fi
  read -r wall_s rss_kib usr_s sys_s <"$tf"
  cpu_s=$(awk -v u="$usr_s" -v s="$sys_s" 'BEGIN { printf "%.2f", u + s }')
  rss_mib=$(( (rss_kib + 512) / 1024 ))
  read -r total_ns exposed_ns < <(python3 - "$report" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(r["total_time_ps"] // 1000, r["ranks"][0]["finish_minus_compute_ps"] // 1000)
EOF
)
}

# ASTRA-sim's published figures (ns, ns, wall seconds as text).
declare -A astra_total=([64]=1082708088 [256]=1083490440 [1024]=)
declare -A astra_exposed=([64]=258088 [256]=1040440 [1024]=)
declare -A astra_wall=([64]=3.39 [256]=70.52 [1024]=2400)
declare -A astra_wall_text=([64]="3.39 s" [256]="70.52 s" [1024]="> 40 min (killed)")
astra_bin=${ASTRA_SIM_BIN:-}
astra_limit=${ASTRA_SIM_LIMIT_S:-900}
[[ -z $astra_bin || -x $astra_bin ]] || { echo "run_scaling.sh: ASTRA_SIM_BIN=$astra_bin is not executable" >&2; exit 2; }

# astra_side_by_side N WORKLOAD NET -> sets astra_wall[N], astra_wall_text[N] from a run of ASTRA-sim here, now.
astra_side_by_side() {
  local n=$1 workload=$2 net=$3 tf=$tmp/astra_$1.time mem=$tmp/astra_mem.json
  printf '{"memory-type": "NO_MEMORY_EXPANSION"}\n' >"$mem"
  if /usr/bin/time -f '%e' -o "$tf" timeout "$astra_limit" "$astra_bin" --workload-configuration="$workload" \
       --system-configuration="$system" --network-configuration="$net" --remote-memory-configuration="$mem" \
       >"$tmp/astra_$n.out" 2>&1; then
    astra_wall[$n]=$(cat "$tf"); astra_wall_text[$n]="$(cat "$tf") s (this run)"
  else
    astra_wall[$n]=$astra_limit; astra_wall_text[$n]="> $astra_limit s (this run, stopped)"
  fi
}

speedup() {  # speedup ASTRA_S OURS_S [lower_bound] -> "x123" / "> x123" / "-"
  [[ $2 =~ ^[0-9.]+$ ]] || { echo -; return; }
  awk -v a="$1" -v b="$2" -v lb="${3:-}" 'BEGIN { if (b < 0.005) b = 0.005; printf "%s%.0fx", lb ? "> " : "", a / b }'
}
deviation() {  # deviation ASTRA_NS OURS_NS
  [[ -n $1 && $2 =~ ^[0-9]+$ ]] || { echo -; return; }
  awk -v a="$1" -v b="$2" 'BEGIN { printf "%+d ns (%+.5f %%)", b - a, (b - a) * 100 / a }'
}

echo "fabemu: $fabemu"
echo "host: $(nproc) cores, $(uname -srm), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
if [[ -n $astra_bin ]]; then
  wall_head="ASTRA-sim wall (this run)"; speed_head="speed-up (wall, side by side)"
else
  wall_head="ASTRA-sim wall (published: another machine and day)"; speed_head="ratio to the published wall (not a measured speed-up)"
fi
echo "| ranks | mode | emulated (ns) | ASTRA-sim emulated (ns) | deviation | finish - compute, rank 0 (ns) | ASTRA-sim exposed (ns) | wall (s) | CPU (s) | $wall_head | $speed_head | peak RSS (MiB) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
walk256=
for n in 64 256 1024; do
  workload=$traces/resnet50_dp_N$n/resnet50
  if [[ ! -e $workload.0.et ]]; then echo "| $n | (no workload at $workload) |||||||||" ; continue; fi
  net=$(ring_yml "$n")
  [[ -n $astra_bin ]] && astra_side_by_side "$n" "$workload" "$net"
  modes=(closed-form walk)
  [[ $n -le 256 ]] && modes+=(packet)
  for mode in "${modes[@]}"; do
    args=(--workload "$workload" --network "$net" --system "$system")
    limit=3600
    case $mode in
      closed-form) ;;
      walk)
        args+=(--no-closed-form); limit=$((walk_limit * 2))
        if [[ $n -eq 1024 && -n $walk256 ]] &&
           { [[ ! $walk256 =~ ^[0-9.]+$ ]] || awk -v w="$walk256" -v l="$walk_limit" 'BEGIN { exit !(w * 4 > l) }'; }; then
          echo "| $n | analytical, message by message | skipped: 256 ranks took $walk256 s, 1024 would take > $walk_limit s ||||||||||"
          continue
        fi ;;
      packet) args+=(--model packet) ;;
    esac
    measure "N${n}_$mode" "$limit" "${args[@]}"
    [[ $mode == walk && $n -eq 256 ]] && walk256=$wall_s
    label=$mode; [[ $mode == closed-form ]] && label="analytical, closed form"
    [[ $mode == walk ]] && label="analytical, message by message"
    lb=; [[ $n -eq 1024 ]] && lb=1
    echo "| $n | $label | $total_ns | ${astra_total[$n]:-not finished} | $(deviation "${astra_total[$n]}" "$total_ns") |" \
         "$exposed_ns | ${astra_exposed[$n]:--} | $wall_s | $cpu_s | ${astra_wall_text[$n]} | $(speedup "${astra_wall[$n]}" "$wall_s" "$lb") | $rss_mib |"
  done
done

if [[ ${SKIP_16K:-0} != 1 ]]; then
  echo
  echo "16,384 ranks (no ASTRA-sim figure; files open at once: limit $(ulimit -n)):"
  echo
  prefix=$tmp/r50_16k/resnet50
  t0=$(date +%s.%N)
  if "$fabemu" trace convert --from astra-text --ranks 16384 "$traces/Resnet50_DataParallel.txt" "$prefix" \
       >"$tmp/convert.out" 2>"$tmp/convert.err"; then
    conv_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    size=$(du -sm "$tmp/r50_16k" | cut -f1)
    net=$(ring_yml 16384)
    measure N16384_closed-form 3600 --workload "$prefix" --network "$net" --system "$system"
    echo "| ranks | mode | emulated (ns) | finish - compute, rank 0 (ns) | wall (s) | CPU (s) | peak RSS (MiB) | trace convert |"
    echo "|---|---|---|---|---|---|---|---|"
    echo "| 16384 | analytical, closed form | $total_ns | $exposed_ns | $wall_s | $cpu_s | $rss_mib | ${conv_s} s, ${size} MB |"
  else
    echo "fabemu trace convert could not make the 16,384-rank workload:"
    sed 's/^/    /' "$tmp/convert.err" | tail -5
  fi
fi
