#!/usr/bin/env bash
# The golden check of a refactor (issue 45: "no change of behaviour"): writes the JSON reports of a fixed set
# of runs into OUT_DIR, with every wall-clock field left out, so that two trees' outputs compare byte for byte.
#   bench/golden_reports.sh FABEMU OUT_DIR          write OUT_DIR/<run>.json (and <run>.status: the exit status)
#   bench/golden_reports.sh --compare DIR_A DIR_B   diff two such folders; exit 1 when they differ
# The runs: every shared microbenchmark (4 collectives x 4/8/16 NPUs) on ASTRA-sim's Ring, FullyConnected and
# Switch networks of its size, with the analytical and the packet model, and on traces/samples/fabric_2d.yaml
# (more NPUs than ranks, two dimensions) with both models; data-parallel ResNet-50 on 64 ranks (Ring 50 GB/s,
# 500 ns, system_ring_4chunks.json); the bundled sample (traces/samples, as the quick start runs it); with
# DPDK, the 8-NPU all-reduce over the in-process ring pair at dilation 1000; a lab run of three `fabemu agent`s
# on 127.0.0.1 (the 8-NPU all-reduce, lab.yaml `fabric: model`, and `fabric: socket` at dilation 1000).
# Wall-clock fields (DPDK, socket and lab sections): only what does not depend on the machine's timing is kept
# (see normalize() below); a path inside the source tree is written as <src>/PATH. Needs ../shared (or
# FABEMU_SHARED_DIR) and python3. GOLDEN_ONLY=REGEX runs only the
# runs whose names match; GOLDEN_KEEP=1 keeps the temporary folder (its path is printed).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)

if [ "${1:-}" = "--compare" ]; then
  [ $# -eq 3 ] || { echo "usage: $0 --compare DIR_A DIR_B" >&2; exit 2; }
  if diff -r "$2" "$3"; then
    echo "golden: $(ls "$2" | wc -l) files identical"
  else
    echo "golden: the reports differ" >&2
    exit 1
  fi
  exit 0
fi
[ $# -eq 2 ] || { echo "usage: $0 FABEMU OUT_DIR | --compare DIR_A DIR_B" >&2; exit 2; }
fabemu=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2
shared=${FABEMU_SHARED_DIR:-$src/../shared}
[ -d "$shared/traces" ] || { echo "golden: no shared traces at $shared/traces" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
agents=()
cleanup() {
  for p in "${agents[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
if [ -n "${GOLDEN_KEEP:-}" ]; then
  trap 'for p in "${agents[@]}"; do kill "$p" 2>/dev/null || true; done; echo "golden: kept $tmp"' EXIT
fi

# Keeps the report's deterministic part: the model's sections whole; of the real-time sections (dpdk, socket,
# lab) only their settings and the counts that no timing changes.
normalize() {
  python3 - "$1" "$2" "$src" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
r.pop("workload", None)  # a path in the temporary folder
KEEP = {"settings", "dilation", "messages", "local_messages", "message_bytes", "messages_completed",
        "bytes_completed", "deliveries", "data_frames", "stall", "fabric", "wire", "dscp", "ecn", "agents"}
LINK_KEEP = {"link", "frames", "bytes", "target_gbps"}
COLL_KEEP = {"index", "messages", "bytes", "modelled_ps"}
for section in ("dpdk", "socket", "lab"):
    s = r.get(section)
    if not isinstance(s, dict):
        continue
    kept = {k: v for k, v in s.items() if k in KEEP}
    if isinstance(s.get("links"), list):
        kept["links"] = [{k: v for k, v in l.items() if k in LINK_KEEP} for l in s["links"]]
    if isinstance(s.get("collectives"), list):
        kept["collectives"] = [{k: v for k, v in c.items() if k in COLL_KEEP} for c in s["collectives"]]
    if isinstance(kept.get("agents"), list):
        kept["agents"] = [{k: v for k, v in a.items() if k in ("name", "ranks")} for a in kept["agents"]]
    r[section] = kept
# Paths inside the source tree (in warnings) are written from its root, so that two worktrees compare.
open(sys.argv[2], "w").write(json.dumps(r, indent=1, sort_keys=True).replace(sys.argv[3] + "/", "<src>/"))
EOF
}

# run NAME ARGS...: fabemu run ARGS -q -r, its report normalized into OUT_DIR/NAME.json and its exit status
# into OUT_DIR/NAME.status.
run() {
  local name=$1
  shift
  if [ -n "${GOLDEN_ONLY:-}" ] && ! [[ $name =~ $GOLDEN_ONLY ]]; then return; fi
  local status=0
  "$fabemu" run "$@" -q -r "$tmp/$name.json" >"$tmp/$name.out" 2>"$tmp/$name.err" || status=$?
  echo "$status" >"$out/$name.status"
  if [ -f "$tmp/$name.json" ]; then normalize "$tmp/$name.json" "$out/$name.json"; fi
  echo "golden: $name (exit $status)"
}

micro=$shared/traces/astra-sim/examples/workload/microbenchmarks
configs=$shared/configs/astra-sim
for coll in all_gather all_reduce all_to_all reduce_scatter; do
  for n in 4 8 16; do
    w=$micro/$coll/${n}npus_1MB/$coll
    for net in Ring FullyConnected Switch; do
      for model in analytical packet; do
        run "micro_${coll}_${n}_${net}_$model" -w "$w" -n "$configs/${net}_${n}npus.yml" -m "$model"
      done
    done
    if [ "$n" -le 8 ]; then
      for model in analytical packet; do
        run "micro_${coll}_${n}_fabric2d_$model" -w "$w" -f "$src/traces/samples/fabric_2d.yaml" -m "$model"
      done
    fi
  done
done

printf 'topology: [ Ring ]\nnpus_count: [ 64 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n' >"$tmp/ring64.yml"
run resnet50_n64 -w "$shared/traces/astra-sim-text/resnet50_dp_N64/resnet50" -n "$tmp/ring64.yml" \
  -s "$configs/system_ring_4chunks.json"

"$fabemu" trace convert --from astra-text --ranks 8 "$src/traces/samples/mlp8_data_parallel.txt" "$tmp/mlp/mlp" >/dev/null
run sample -w "$tmp/mlp/mlp" -f "$src/traces/samples/fabric_2d.yaml"

# grep without -q reads the whole help: with -q it may leave before fabemu has written it all, and
# pipefail then takes fabemu's SIGPIPE for "built without DPDK" (the DPDK run was left out now and then).
if "$fabemu" run --help 2>&1 | grep -- "--fabric.*dpdk" >/dev/null; then
  run dpdk_ring_all_reduce_8 -w "$micro/all_reduce/8npus_1MB/all_reduce" -n "$configs/Ring_8npus.yml" \
    --fabric dpdk --dilation 1000
fi

# Three agents on loopback, the coordinator here.
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/lab.token")
for a in a b c; do
  mkdir -p "$tmp/work_$a"
  "$fabemu" agent --listen 127.0.0.1:0 --token-file "$tmp/lab.token" --work-dir "$tmp/work_$a" \
    >"$tmp/agent_$a.out" 2>"$tmp/agent_$a.err" &
  agents+=($!)
done
for a in a b c; do
  for _ in $(seq 100); do grep -q "^listening on" "$tmp/agent_$a.out" && break; sleep 0.1; done
  grep -q "^listening on" "$tmp/agent_$a.out" || { echo "golden: agent $a did not start:" >&2; cat "$tmp/agent_$a.err" >&2; exit 2; }
done
port() { sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$tmp/agent_$1.out"; }
for plane in model socket; do
  {
    echo "token_file: lab.token"
    echo "fabric: $plane"
    echo "agents:"
    echo "  - {name: a, control: 127.0.0.1:$(port a), data: 127.0.0.1:47100, ranks: 0-2}"
    echo "  - {name: b, control: 127.0.0.1:$(port b), data: 127.0.0.1:47200, ranks: 3-5}"
    echo "  - {name: c, control: 127.0.0.1:$(port c), data: 127.0.0.1:47300, ranks: 6-7}"
  } >"$tmp/lab_$plane.yaml"
  pacing=(--as-fast-as-possible)
  if [ "$plane" = socket ]; then pacing=(--dilation 1000); fi
  run "lab_${plane}_all_reduce_8" -w "$micro/all_reduce/8npus_1MB/all_reduce" -n "$configs/Ring_8npus.yml" \
    --agents "$tmp/lab_$plane.yaml" "${pacing[@]}"
done
echo "golden: $(ls "$out"/*.json | wc -l) reports in $out"
