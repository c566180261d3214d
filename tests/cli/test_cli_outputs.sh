#!/usr/bin/env bash
# End-to-end checks of what `fabemu` writes and refuses (issue 44): output paths checked before a run,
# conversions that leave no partial file and write to stdout, regression gates that fail on partial
# reports, options that do not apply refused, and multi-dimensional runs with idle NPUs.
# Usage: test_cli_outputs.sh FABEMU SHARED_TRACES_DIR REPO
set -euo pipefail
fabemu=$1
shared=$2
repo=$3
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

expect_status 0 "$fabemu" trace generate collective --type all_reduce --ranks 4 --size 1MiB -o "$tmp/ar/w"
w=$tmp/ar/w
net=$tmp/ring4.yml
printf 'topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n' >"$net"

# --- item 20: an unwritable --report fails before the run, and an old report survives a failed run
mkdir "$tmp/ro"; chmod 500 "$tmp/ro"
if [ "$(id -u)" -ne 0 ]; then
  expect_status 2 "$fabemu" run -w "$w" -n "$net" --report "$tmp/ro/r.json" -q
  expect_text "$tmp/err" "--report $tmp/ro/r.json: cannot create a file in $tmp/ro"
fi
expect_status 2 "$fabemu" run -w "$w" -n "$net" --report "$tmp/no/such/dir/r.json" -q
expect_text "$tmp/err" "--report $tmp/no/such/dir/r.json: cannot create a file in $tmp/no/such/dir: No such file or directory"
expect_status 2 "$fabemu" run -w "$w" -n "$net" --report "$tmp/ro" -q
expect_text "$tmp/err" "--report $tmp/ro: a directory, not a regular file"
echo "old report" >"$tmp/r.json"
expect_status 2 "$fabemu" run -w "$tmp/ar/missing" -n "$net" --report "$tmp/r.json" -q
[ "$(cat "$tmp/r.json")" = "old report" ] || fail "a failed run replaced the old report"
expect_status 0 "$fabemu" run -w "$w" -n "$net" --report "$tmp/r.json" -q
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["status"]=="complete" and r["time_reached_ps"]==r["total_time_ps"], r["status"]' "$tmp/r.json"
[ -z "$(ls -A "$tmp" | grep fabemu-tmp || true)" ] || fail "a temporary report was left behind"

# --- item 20: trace convert to stdout, no partial output on failure, --from json with a prefix, anonymize .gz
expect_status 0 "$fabemu" trace convert "$w.0.et" -
expect_text "$tmp/out" '"type":"COMM_COLL_NODE"'
expect_text "$tmp/err" "-> stdout: 1 nodes"
[ ! -e "-" ] || fail "trace convert wrote a file named -"
mkdir -p "$tmp/js"
expect_status 0 "$fabemu" trace convert "$w" "$tmp/js/w"
mkdir -p "$tmp/back"
expect_status 0 "$fabemu" trace convert --from json "$tmp/js/w" "$tmp/back/w.gz"
expect_text "$tmp/out" "$tmp/js/w.3.json -> $tmp/back/w.3.et.gz: 1 nodes"
expect_status 0 "$fabemu" trace validate "$tmp/back/w"
head -c 40 "$tmp/js/w.1.json" >"$tmp/js/bad.json"   # a cut JSON Lines file
expect_status 2 "$fabemu" trace convert "$tmp/js/bad.json" "$tmp/bad.et"
[ ! -e "$tmp/bad.et" ] || fail "a failed conversion left $tmp/bad.et behind"
cp "$tmp/js/bad.json" "$tmp/js/w.2.json"               # rank 2 of the prefix is bad: ranks 0, 1 are removed
mkdir -p "$tmp/part"
expect_status 2 "$fabemu" trace convert --from json "$tmp/js/w" "$tmp/part/w"
[ -z "$(ls -A "$tmp/part")" ] || fail "a failed conversion left $(ls "$tmp/part") behind"
mkdir -p "$tmp/anon"
expect_status 0 "$fabemu" trace anonymize "$w" "$tmp/anon/w.gz"
[ -f "$tmp/anon/w.0.et.gz" ] || fail "anonymize PREFIX out.gz did not write out.0.et.gz: $(ls "$tmp/anon")"
[ "$(head -c 2 "$tmp/anon/w.0.et.gz" | od -An -tx1 | tr -d ' ')" = "1f8b" ] || fail "out.0.et.gz is not gzip"

# --- item 16: a gate fails on a deadlocked candidate, and warns on another workload
expect_status 0 "$fabemu" trace generate collective --type all_reduce --ranks 4 --size 1MiB -o "$tmp/dl/w"
# Rank 3's node becomes a COMP node: the all-reduce never completes on the others.
expect_status 0 "$fabemu" trace convert "$tmp/dl/w.3.et" "$tmp/dl3.json"
python3 - "$tmp/dl3.json" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
node = json.loads(lines[1])
node["type"] = "COMP_NODE"
node["durationMicros"] = "5"
node.pop("attr", None)
lines[1] = json.dumps(node)
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
expect_status 0 "$fabemu" trace convert "$tmp/dl3.json" "$tmp/dl/w.3.et"
expect_status 0 "$fabemu" trace generate collective --type all_gather --ranks 4 --size 1MiB -o "$tmp/ag/w"
expect_status 1 "$fabemu" run -w "$tmp/dl/w" -n "$net" --report "$tmp/dl.json"
expect_text "$tmp/out" "Total time    none: the run is deadlocked (3 of 4 ranks did not finish)"
expect_text "$tmp/out" "did not finish (its last node ended then)"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["status"]=="deadlocked" and [k["finished"] for k in r["ranks"]]==[False,False,False,True], r' "$tmp/dl.json"
expect_status 1 "$fabemu" compare "$tmp/r.json" "$tmp/dl.json" --max-regression 1000
expect_text "$tmp/out" "FAIL: B (the candidate) is a partial report: the run is deadlocked"
expect_status 1 "$fabemu" compare "$tmp/dl.json" "$tmp/r.json" --max-regression 1000
expect_text "$tmp/out" "FAIL: A (the baseline) is a partial report"
expect_status 0 "$fabemu" run -w "$tmp/ag/w" -n "$net" --report "$tmp/ag.json" -q
expect_status 0 "$fabemu" compare "$tmp/r.json" "$tmp/ag.json" --max-regression 1000
expect_text "$tmp/out" "warning: A and B have different workloads: $tmp/ar/w / $tmp/ag/w"

# --- item 24: options that do not apply
expect_status 2 "$fabemu" run -w "$w" -n "$net" --mtu 4096 -q
expect_text "$tmp/err" "--mtu sets the packet model's packet size; the analytical model sends whole messages"
expect_status 2 "$fabemu" run -w "$w" -n "$net" -m packet --no-closed-form -q
expect_text "$tmp/err" "--no-closed-form turns off the analytical model's closed form; the packet model has none"
expect_status 0 "$fabemu" run -w "$w" -f "$repo/traces/samples/fabric_2d.yaml" -m analytical
expect_text "$tmp/out" "fabric_2d.yaml: mtu 65536 is not used: the analytical model sends whole messages"

# --- item 25: help and messages
expect_status 0 "$fabemu" run --help
expect_text "$tmp/out" "--dilation D"
expect_text "$tmp/out" "DPDK, socket and lab runs: run D times slower"
expect_text "$tmp/out" "FPGA: hardware in the loop, the card's whole path in real"
expect_text "$tmp/out" "DPDK and socket: drop this fraction"
expect_text "$tmp/out" "Slowest collectives listed in the summary (default 5)"
expect_status 2 "$fabemu" compare "$tmp/r.json" "$tmp/r.json" --max-regression -1
expect_text "$tmp/err" "expected a percentage of 0 or more, got -1"
[ "$(wc -c <"$tmp/err")" -lt 400 ] || fail "the --max-regression message is too long: $(cat "$tmp/err")"

# --- items 1-3: multi-dimensional networks with idle NPUs, both models (crashed or deadlocked before)
for coll in all_gather all_reduce all_to_all reduce_scatter; do
  for n in 4 8 16; do
    f=$shared/astra-sim/examples/workload/microbenchmarks/$coll/${n}npus_1MB/$coll
    [ -e "$f.0.et" ] || { echo "skip: no $f.0.et (shared traces absent)"; continue; }
    for fabric in fabric_2d h100_cluster a100_cluster; do
      for model in analytical packet; do
        [ "$fabric" = fabric_2d ] && [ "$n" -gt 8 ] && continue   # fabric_2d has 8 NPUs
        expect_status 0 "$fabemu" run -w "$f" -f "$repo/traces/samples/$fabric.yaml" -m "$model" -q --report "$tmp/md.json"
      done
    done
  done
done
# --- issue 51 item 4: a fat-tree as the scale-out dimension (8 GPUs on NVSwitch x a leaf-spine fabric of 16
# nodes), a generated LLM iteration on the packet model: leaf and spine links named in the report and summary
expect_status 0 "$fabemu" trace generate llm --preset llama3-8b --layers 2 --tp 8 --pp 1 --dp 16 -o "$tmp/llm/w"
expect_status 0 "$fabemu" run -w "$tmp/llm/w" -f "$repo/traces/samples/nvswitch_fattree.yaml" --report "$tmp/ft.json"
expect_text "$tmp/out" "FatTree(4 leaves x 4 hosts, 2 spines, 2:1 oversubscribed)"
expect_text "$tmp/out" "  fat-tree leaf links "
expect_text "$tmp/out" "% on average, over 128 links"
python3 - "$tmp/ft.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "complete", r["status"]
tiers = {}
for l in r["links"]:
    t = l.get("tier", "")
    assert (t != "") == (l["dim"] == 1), l
    tiers.setdefault(t, []).append(l)
assert set(tiers) == {"", "leaf", "spine"}, set(tiers)
# Every node's 8 rails: 16 nodes x 8 GPUs send on their leaf up-links (plus the down-links); spines carry the
# data-parallel rings' cross-leaf hops.
assert len(tiers["leaf"]) == 2 * 128, len(tiers["leaf"])
assert all(l["bytes"] > 0 for l in tiers["spine"]) and len(tiers["spine"]) > 0
print("fat-tree run: %d leaf links, %d spine links, max spine utilization %.4f" %
      (len(tiers["leaf"]), len(tiers["spine"]), max(l["utilization"] for l in tiers["spine"])))
PY
expect_status 0 "$fabemu" run -w "$tmp/llm/w" -f "$repo/traces/samples/nvswitch_fattree.yaml" -q --group-collectives flat
expect_status 2 "$fabemu" run -w "$tmp/llm/w" -f "$repo/traces/samples/nvswitch_fattree.yaml" -q --group-collectives tree
expect_text "$tmp/err" "--group-collectives"
echo "test_cli_outputs: all passed"
