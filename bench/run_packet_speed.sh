#!/usr/bin/env bash
# Speed of the serial packet model (issue 50): data-parallel ResNet-50 at 256 and 1,024 ranks (Ring 50 GB/s,
# 500 ns, system_ring_4chunks.json, as run_scaling.sh) and a 1,024-rank LLM iteration (GPT-3 175B, TP8 PP16
# DP8, global batch 128, on traces/samples/a100_cluster.yaml with 64 streams), each `fabemu run -m packet`.
# Prints wall time, CPU time and peak RSS per run.
#
#   bench/run_packet_speed.sh [FABEMU [OLD_FABEMU]]
#     FABEMU      default: build/host/fabemu (relative to the repo)
#     OLD_FABEMU  another build to compare with: each case then runs old, new, old, new... (REPS times each,
#                 alternated, so that the shared machine's load falls on both alike), the ratio is
#                 old / new of the median wall times, and the two reports are compared byte for byte
#                 (normalised as golden_reports.sh does; the report has no wall-clock field of its own).
#   Environment: REPS (default 1) runs per binary and case; CASES (default "r50_256 r50_1024 llm_1024") picks
#   cases; SHARED_DIR (default ../shared); LLM_DIR: a folder holding the LLM trace as LLM_DIR/llm.*.et
#   (default: generated into the temporary folder, ~40 s); TIME_LIMIT_S (default 1800) stops a run.
# Everything goes to a temp dir that is removed on exit.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
new=${1:-$repo/build/host/fabemu}
old=${2:-}
shared=${SHARED_DIR:-$repo/../shared}
reps=${REPS:-1}
cases=${CASES:-r50_256 r50_1024 llm_1024}
limit=${TIME_LIMIT_S:-1800}

for b in "$new" ${old:+"$old"}; do
  [[ -x $b ]] || { echo "run_packet_speed.sh: no fabemu binary at $b" >&2; exit 2; }
done
source "$(dirname "${BASH_SOURCE[0]}")/astra_text_lib.sh"
astra_text_setup run_packet_speed.sh

# The report without the workload's path (a temporary folder), keys sorted.
normalize() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
r.pop("workload", None)
open(sys.argv[2], "w").write(json.dumps(r, indent=1, sort_keys=True))
EOF
}

# args_of CASE -> sets args (fabemu run arguments)
args_of() {
  case $1 in
    r50_256 | r50_1024)
      local n=${1#r50_}
      args=(--workload "$traces/resnet50_dp_N$n/resnet50" --network "$(ring_yml "$n")" --system "$system") ;;
    llm_1024)
      local dir=${LLM_DIR:-$tmp/llm}
      if [[ ! -e $dir/llm.0.et ]]; then
        "$new" trace generate llm --preset gpt3-175b --tp 8 --pp 16 --dp 8 --global-batch 128 -o "$dir/llm" \
          >"$tmp/generate.out" 2>&1 || { echo "run_packet_speed.sh: trace generate failed:" >&2; tail -5 "$tmp/generate.out" >&2; exit 1; }
      fi
      args=(--workload "$dir/llm" --fabric-config "$repo/traces/samples/a100_cluster.yaml" --comm-streams 64) ;;
    *) echo "run_packet_speed.sh: unknown case $1" >&2; exit 2 ;;
  esac
}

# measure BINARY NAME -> appends "wall cpu rss_mib" to $tmp/NAME.times, the normalised report to $tmp/NAME.json
measure() {
  local bin=$1 name=$2 tf=$tmp/$2.time rc=0
  /usr/bin/time -f '%e %M %U %S' -o "$tf" timeout "$limit" "$bin" run --quiet -m packet --report "$tmp/$name.raw.json" \
    "${args[@]}" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "run_packet_speed.sh: $name failed (exit $rc):" >&2; tail -5 "$tmp/$name.err" >&2; exit 1
  fi
  local wall rss usr sys
  read -r wall rss usr sys <"$tf"
  awk -v w="$wall" -v r="$rss" -v u="$usr" -v s="$sys" 'BEGIN { printf "%s %.2f %d\n", w, u + s, (r + 512) / 1024 }' \
    >>"$tmp/$name.times"
  normalize "$tmp/$name.raw.json" "$tmp/$name.json"
}

median() {  # median FILE COLUMN
  sort -n -k"$2","$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "fabemu: $new${old:+ (against $old)}"
echo "host: $(nproc) cores, $(uname -srm), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC'), $reps run(s) each"
echo
if [[ -n $old ]]; then
  echo "| case | emulated (ns) | old wall (s) | new wall (s) | speed-up (old / new, side by side) | old CPU (s) | new CPU (s) | old RSS (MiB) | new RSS (MiB) | reports |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
else
  echo "| case | emulated (ns) | wall (s) | CPU (s) | peak RSS (MiB) |"
  echo "|---|---|---|---|---|"
fi
for c in $cases; do
  args_of "$c"
  for ((i = 0; i < reps; i++)); do
    [[ -n $old ]] && measure "$old" "${c}_old"
    measure "$new" "${c}_new"
  done
  total_ns=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total_time_ps"] // 1000)' "$tmp/${c}_new.json")
  nw=$(median "$tmp/${c}_new.times" 1); nc=$(median "$tmp/${c}_new.times" 2); nr=$(median "$tmp/${c}_new.times" 3)
  if [[ -n $old ]]; then
    ow=$(median "$tmp/${c}_old.times" 1); oc=$(median "$tmp/${c}_old.times" 2); orss=$(median "$tmp/${c}_old.times" 3)
    same=identical; cmp -s "$tmp/${c}_old.json" "$tmp/${c}_new.json" || same="DIFFER"
    ratio=$(awk -v a="$ow" -v b="$nw" 'BEGIN { printf "%.2fx", a / b }')
    echo "| $c | $total_ns | $ow | $nw | $ratio | $oc | $nc | $orss | $nr | $same |"
  else
    echo "| $c | $total_ns | $nw | $nc | $nr |"
  fi
done
