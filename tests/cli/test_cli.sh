#!/usr/bin/env bash
# End-to-end checks of the `fabemu` command line: exit statuses, the messages a user reads, and
# round trips through files. Usage: test_cli.sh FABEMU SHARED_TRACES_DIR
set -euo pipefail
fabemu=$1
shared=$2
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

# generate -> info -> validate
expect_status 0 "$fabemu" trace generate collective --type all_to_all --ranks 4 --size 64KiB --out-dir "$tmp/gen"
expect_text "$tmp/out" "wrote 4 rank files"
prefix="$tmp/gen/all_to_all/4npus_64KB/all_to_all"
expect_status 0 "$fabemu" trace info "$prefix"
expect_text "$tmp/out" "ALL_TO_ALL"
expect_text "$tmp/out" "64 KiB  4 in all, on 4 ranks"
expect_status 0 "$fabemu" trace info --json "$prefix"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ranks"]==4 and d["per_rank"][2]["collectives"][0]["comm_size"]==65536, d' "$tmp/out"
expect_status 0 "$fabemu" trace validate "$prefix"
[ "$(tail -n 1 "$tmp/out")" = "VALID" ] || fail "validate did not end with VALID"
expect_status 0 "$fabemu" trace validate "$tmp/gen/all_to_all/4npus_64KB"  # the folder stands for its workload

# ranks that disagree: rank 2 issues a different size -> exit 1, the finding names file, rank, node
expect_status 0 "$fabemu" trace generate collective --type all_to_all --ranks 4 --size 1MiB -o "$tmp/other/x"
cp "$tmp/other/x.2.et" "$prefix.2.et"
expect_status 1 "$fabemu" trace validate "$prefix"
expect_text "$tmp/out" "all_to_all.2.et: rank 2: byte 8: node #0 (id 2): collective #0 of default group is ALL_TO_ALL of 1048576 bytes here but ALL_TO_ALL of 65536 bytes on rank 0"
expect_text "$tmp/out" "INVALID"

# a missing rank file -> exit 2 naming it
rm "$prefix.1.et"
expect_status 2 "$fabemu" trace info "$prefix"
expect_text "$tmp/err" "all_to_all.1.et: rank 1: missing rank file"

# a truncated file -> exit 2 naming file, rank and byte
head -c 20 "$prefix.0.et" > "$tmp/cut.0.et"
expect_status 2 "$fabemu" trace info "$tmp/cut.0.et"
expect_text "$tmp/err" "cut.0.et: rank 0: byte 8: node #0: a Node of"

# convert .et -> JSON -> .et is byte-identical; anonymize keeps it valid
expect_status 0 "$fabemu" trace convert "$prefix.0.et" "$tmp/a.json"
expect_text "$tmp/a.json" '"type":"COMM_COLL_NODE"'
expect_status 0 "$fabemu" trace convert "$tmp/a.json" "$tmp/b.et"
cmp "$prefix.0.et" "$tmp/b.et" || fail "JSON round trip changed the bytes"
expect_status 0 "$fabemu" trace anonymize "$prefix.0.et" "$tmp/anon.0.et.gz"
expect_text "$tmp/out" "anonymized 1 file: 1 nodes, 1 names replaced"
expect_status 0 "$fabemu" trace validate "$tmp/anon.0.et.gz"

# bad usage -> exit 2
expect_status 2 "$fabemu" trace generate collective --type allreduce --ranks 4 --size 1MB
expect_text "$tmp/err" "unknown collective 'allreduce'"

# compare: delta of two reports, the regression gate (exit 1), unreadable reports (exit 2)
cat > "$tmp/ra.json" <<'EOF'
{"schema": "fabemu.report/1", "workload": "w", "fabric": "software", "model": "analytical", "topology": "Ring(2)",
 "npus": 2, "total_time_ps": 1000000,
 "ranks": [{"rank": 0, "finish_time_ps": 1000000, "compute_ps": 0, "comm_busy_ps": 1000000, "exposed_comm_ps": 1000000,
            "idle_ps": 0, "nodes": 1, "comp_nodes": 0, "comm_nodes": 1, "compute_scale": 1}],
 "collectives": [{"index": 0, "type": "ALL_REDUCE", "group": "", "name": "ar", "node_id": 0, "bytes": 1048576,
                  "members": 2, "algorithm": "ring", "chunks": 1, "messages": 2, "message_bytes": 1048576,
                  "issued_first_ps": 0, "issued_last_ps": 0, "finished_ps": 1000000}],
 "p2p": {"sends": 0, "bytes": 0}, "links": [],
 "totals": {"messages": 2, "message_bytes": 1048576, "events": 4, "collectives_closed_form": 1}, "warnings": []}
EOF
sed 's/"total_time_ps": 1000000/"total_time_ps": 1100000/' "$tmp/ra.json" > "$tmp/rb.json"
expect_status 0 "$fabemu" compare "$tmp/ra.json" "$tmp/rb.json"
expect_text "$tmp/out" "Delta (B - A)  +100.000 ns (100000 ps, +10.00%)"
expect_text "$tmp/out" "ALL_REDUCE"
expect_status 1 "$fabemu" compare --max-regression 5 "$tmp/ra.json" "$tmp/rb.json"
expect_text "$tmp/out" "REGRESSION: B is +10.00% slower than A (limit 5.00%)"
expect_status 0 "$fabemu" compare --max-regression 10 "$tmp/ra.json" "$tmp/rb.json"
expect_status 0 "$fabemu" compare --max-regression 0 "$tmp/rb.json" "$tmp/ra.json"  # faster: never a regression
expect_status 0 "$fabemu" compare --json --per-rank "$tmp/rb.json" "$tmp/ra.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["delta_ps"]==-100000 and len(d["ranks"])==1 and not d["regression"], d' "$tmp/out"
expect_status 2 "$fabemu" compare "$tmp/ra.json" "$tmp/absent.json"
expect_text "$tmp/err" "absent.json: cannot open the report"
echo '{"schema": "fabemu.report/1", "workload": 3}' > "$tmp/bad.json"
expect_status 2 "$fabemu" compare "$tmp/ra.json" "$tmp/bad.json"
expect_text "$tmp/err" "bad.json: /workload: expected a string"

# run: the bundled sample of the quick start, with a fabemu fabric file, report and timeline
src="$(cd "$(dirname "$0")/../.." && pwd)"
expect_status 0 "$fabemu" trace convert --from astra-text --ranks 8 "$src/traces/samples/mlp8_data_parallel.txt" "$tmp/mlp/mlp"
expect_status 0 "$fabemu" run -w "$tmp/mlp/mlp" -f "$src/traces/samples/fabric_2d.yaml" -r "$tmp/mlp.json" -t "$tmp/mlp_timeline.json"
expect_text "$tmp/out" "Total time    11.287 ms (11287188640 ps)"
expect_text "$tmp/out" "Topology      Ring(4) 800 Gb/s 250 ns x Switch(2) 200 Gb/s 1500 ns"
python3 - "$tmp/mlp.json" "$tmp/mlp_timeline.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema"] == "fabemu.report/2" and r["total_time_ps"] == 11287188640, r["total_time_ps"]
assert len(r["ranks"]) == 8 and all(x["finish_time_ps"] == 11287188640 for x in r["ranks"])
assert all(x["compute_ps"] == 11000000000 and x["exposed_comm_ps"] == 287188640 for x in r["ranks"])
assert all(x["compute_ps"] + x["exposed_comm_ps"] + x["idle_ps"] == x["finish_time_ps"] for x in r["ranks"])
assert len(r["collectives"]) == 8 and all(c["members"] == 8 and c["algorithm"] == "ring+ring+ring" for c in r["collectives"])
assert len(r["links"]) == 24
t = json.load(open(sys.argv[2]))
names = {e["args"]["name"] for e in t["traceEvents"] if e.get("ph") == "M" and e["name"] == "process_name"}
assert names == {f"rank {i}" for i in range(8)} | {"network"}, names  # the packet model: link counters
assert sum(1 for e in t["traceEvents"] if e.get("ph") == "X") > 8 * 31
# every rank sent and received the same (a balanced data-parallel run), summing to the totals
for k in ("sent_messages", "sent_bytes", "received_messages", "received_bytes"):
    assert len({x[k] for x in r["ranks"]}) == 1 and r["ranks"][0][k] > 0, k
assert sum(x["sent_messages"] for x in r["ranks"]) == r["totals"]["messages"]
assert sum(x["received_bytes"] for x in r["ranks"]) == r["totals"]["message_bytes"]
# a "bytes in flight" counter track on every rank, starting at 0 ps and ending with 0
c = [e for e in t["traceEvents"] if e.get("ph") == "C" and e["name"] == "bytes in flight"]
assert {e["pid"] for e in c} == set(range(1, 9)), {e["pid"] for e in c}
assert all(e["args"]["value"] >= 0 for e in c) and max(e["args"]["value"] for e in c) > 0
assert c[-1]["args"]["value"] == 0
PY
# run: ASTRA-sim inputs; the analytical and packet models agree on a ring; runs are byte-identical
ring4_all_reduce
for model in analytical packet; do
  expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" -m $model -q -r "$tmp/$model.json"
  [ ! -s "$tmp/out" ] || fail "--quiet printed something"
  python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["total_time_ps"]; assert t == 43051456, t' "$tmp/$model.json"
done
expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" -m packet -q -r "$tmp/packet2.json"
cmp "$tmp/packet.json" "$tmp/packet2.json" || fail "two runs gave different reports"
# --link-series: each link's busy time per bin (rows sum to the link's busy time within its packets' ps);
# with a timeline, the busiest links' utilization as counters on the network process
expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" -m packet -q -r "$tmp/series.json" \
  --link-series 16 -t "$tmp/series_tl.json"
python3 - "$tmp/series.json" "$tmp/series_tl.json" "$tmp/packet.json" <<'EOF2' || fail "--link-series is wrong"
import json, sys
r, t, plain = (json.load(open(f)) for f in sys.argv[1:4])
s = r.pop("link_series")
assert r == plain, "--link-series changed the rest of the report"
links = {l["id"]: l for l in r["links"]}
assert [l["id"] for l in s["links"]] == sorted(links) and 4 <= len(links) <= 32, s["links"]
assert 0 < s["bins"] <= 16 and (s["bins"] - 1) * s["bin_ps"] < r["total_time_ps"], s
for row in s["links"]:
    l = links[row["id"]]
    assert len(row["busy_ps"]) == s["bins"] and all(0 <= v <= s["bin_ps"] for v in row["busy_ps"]), row
    assert l["busy_ps"] <= sum(row["busy_ps"]) <= l["busy_ps"] + l["packets"], (row, l)
c = [e for e in t["traceEvents"] if e.get("ph") == "C" and e["pid"] == 1000000000]
assert {e["name"] for e in c} == {f'link {i} ({l["from"]}->{l["to"]}) utilization' for i, l in links.items()}, c[:3]
assert len(c) == len(links) * (s["bins"] + 1) and all(0 <= e["args"]["value"] <= 1 for e in c)
assert any(e.get("ph") == "M" and e["pid"] == 1000000000 and e["args"].get("name") == "network" for e in t["traceEvents"])
EOF2
# the progress line (a run of 196,636 events: drawn after the first 16,384): drawn on a terminal (script(1) gives the run one) and erased at the end, so the summary
# follows a clean line; absent when stderr is not a terminal, and under -q
if command -v script >/dev/null; then
  SHELL=/bin/sh TERM=xterm script -qec "'$fabemu' run -w '$ar' -n '$tmp/ring4.yml' -s '$tmp/sys.json' -m packet --mtu 32" \
    /dev/null > "$tmp/tty.txt" 2>&1 || fail "the run under script(1) failed"
  python3 - "$tmp/tty.txt" <<'EOF2' || fail "no progress line on a terminal, or it was not erased"
import sys
t = open(sys.argv[1], "rb").read().decode()
assert "\r\x1b[Kfabemu: emulated " in t and " nodes walked, " in t and " of 4 ranks finished, " in t, t[:300]
last = t.rindex("fabemu: emulated ")
assert "\r\x1b[K" in t[last:] and t.index("Total time", last) > t.index("\r\x1b[K", last), t[last:last + 300]
EOF2
  expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" -m packet --mtu 32
  [ ! -s "$tmp/err" ] || fail "a progress line went to a file: $(head -c 200 "$tmp/err")"
  SHELL=/bin/sh TERM=xterm script -qec "'$fabemu' run -w '$ar' -n '$tmp/ring4.yml' -s '$tmp/sys.json' -m packet --mtu 32 -q" \
    /dev/null > "$tmp/tty_q.txt" 2>&1 || fail "the -q run under script(1) failed"
  [ ! -s "$tmp/tty_q.txt" ] || fail "-q printed on a terminal: $(head -c 200 "$tmp/tty_q.txt")"
else
  echo "SKIP: no script(1) (bsdutils): the progress line is not tested"
fi
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" -m packet -q --link-series 3
expect_text "$tmp/err" "--link-series 3: the bins must be an even number from 2 to 65536"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" -m analytical -q --link-series 8
expect_text "$tmp/err" "--link-series records the links of the packet model in this process (--model packet, or --fabric socket or dpdk); this run is on the analytical model"
# --fabric fpga: the RTL under Verilator (hwemu) and the cycle model (hop-level interface), and the card's
# C++ reference (message-level) give the packet model's report (only the fabric name, the event count and
# the "fpga" section differ); xrt:0 without a board is a clear error.
# same_as_packet REPORT CHECK: REPORT equals packet.json but for those, and the python CHECK on its "fpga"
# section f (and the packet report a) holds. A third argument: the packet report to compare with (default
# packet.json).
same_as_packet() {
  python3 - "${3:-$tmp/packet.json}" "$1" "$2" <<'EOF2'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
f = b["fpga"]
assert eval(sys.argv[3]), f
for r in (a, b):
    for k in ("fabric", "fpga"):
        r.pop(k, None)
    r["totals"].pop("events")
assert a == b, [k for k in a if a[k] != b.get(k)]
EOF2
}
for dev in hwemu model; do
  expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric fpga --device $dev -r "$tmp/fpga_$dev.json"
  expect_text "$tmp/out" "packet-hops"
  same_as_packet "$tmp/fpga_$dev.json" 'f["interface"] == "hops" and f["hops"] > 0 and f["cycles"] > 0' ||
    fail "--fabric fpga --device $dev differs from the packet model"
done
expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric fpga --fpga-interface messages -r "$tmp/fpga_msg.json"
expect_text "$tmp/out" "host-card traffic"
same_as_packet "$tmp/fpga_msg.json" '(f["interface"] == "messages" and f["messages"] == a["totals"]["messages"] and f["syncs"] > 0
    and f["bytes_to_card"] >= 32 * f["messages"] and f["bytes_from_card"] >= 32 * f["messages"])' ||
  fail "--fabric fpga --fpga-interface messages differs from the packet model"
expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric fpga --fpga-interface messages --device hwemu -r "$tmp/fpga_msg_hwemu.json"
same_as_packet "$tmp/fpga_msg_hwemu.json" '(f["interface"] == "messages" and f["device"].startswith("hwemu")
    and f["messages"] == a["totals"]["messages"])' ||
  fail "--fabric fpga --fpga-interface messages --device hwemu differs from the packet model"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric fpga --fpga-interface messages --device xrt:0
expect_text "$tmp/err" "run it with --fpga-interface hops"
# --fabric fpga --dilation D: hardware in the loop, the card's whole path under Verilator (frames through a
# stand-in device into the card's receive path; hw/sched/doc/sched_hil.md), or in C++ (--device model): the
# packet model's report, and the wire's section (a device of 1 us = 322 cycles, dropping every 50th frame:
# the flows' lost adds up to exactly what it dropped, nothing reordered)
expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" -m packet --mtu 4096 -q -r "$tmp/packet4096.json"
hil_devices=model
if "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric fpga --fpga-interface messages --device hwemu -q \
    -r "$tmp/probe_hwemu.json" >/dev/null 2>&1; then
  hil_devices="model hwemu"
fi
for dev in $hil_devices; do
  expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric fpga --dilation 100 --mtu 4096 \
    --device $dev --fpga-device-delay 1 --fpga-device-drop 50 -r "$tmp/fpga_hil_$dev.json"
  expect_text "$tmp/out" "late departures"
  expect_text "$tmp/out" "measured/modelled"
  # 322 cycles of 102400/33 ps at dilation 100: 9991.8 emulated ps (the histogram gives its bucket's bound)
  same_as_packet "$tmp/fpga_hil_$dev.json" '(f["wire"]["frames_sent"] > 0
    and f["device"].startswith("'$dev'")
    and f["wire"]["device"]["dropped"] == f["wire"]["frames_sent"] // 50
    and f["wire"]["frames_received"] == f["wire"]["frames_sent"] - f["wire"]["device"]["dropped"]
    and f["wire"]["device"]["latency_cycles"] == 322 and f["wire"]["dilation"] == 100
    and 9900 <= f["wire"]["latency_ps"]["min"] <= 9992
    and f["wire"]["latency_ps"]["count"] == f["wire"]["frames_received"]
    and sum(x["sent"] for x in f["wire"]["flows"]) == f["wire"]["frames_sent"]
    and all(x["lost"] == x["sent"] - x["frames"] and x["reordered"] == 0 for x in f["wire"]["flows"])
    and sum(x["lost"] for x in f["wire"]["flows"]) == f["wire"]["device"]["dropped"]
    and sum(c["messages"] for c in f["wire"]["collectives"]) == f["messages"]
    and all(c["modelled_ps"] > 0 and c["arrived"] <= c["messages"] for c in f["wire"]["collectives"]))' "$tmp/packet4096.json" ||
    fail "--fabric fpga --dilation --device $dev: report or wire section"
done
# The model's wire section is hw-emu's, but for the clock at the end
if [ "$hil_devices" = "model hwemu" ]; then
  python3 - "$tmp/fpga_hil_model.json" "$tmp/fpga_hil_hwemu.json" <<'EOF2' || fail "--dilation: --device model's wire differs from hwemu's"
import json, sys
a, b = (json.load(open(f))["fpga"]["wire"] for f in sys.argv[1:3])
for w in (a, b):
    w.pop("cycles"); w.pop("wall_ms")
assert a == b, [k for k in a if a[k] != b.get(k)]
EOF2
fi
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric fpga --dilation 100 --device xrt:0
expect_text "$tmp/err" "--device xrt:0 has no wire yet"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric fpga --dilation 100 --fpga-interface hops
expect_text "$tmp/err" "--fpga-interface hops does not take it"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric fpga --fpga-device-delay 1
expect_text "$tmp/err" "--fpga-device-delay sets the stand-in device on the card's wire, which runs with --dilation"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric fpga --dilation 10 --fpga-device-ecn 1000
expect_text "$tmp/err" "give --fpga-device-rate too"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric fpga --dilation 10 --fpga-device-drop 1
expect_text "$tmp/err" "--fpga-device-drop 1 would drop every frame"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --fpga-device-rate 10
expect_text "$tmp/err" "--fpga-device-rate needs --fabric fpga"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fpga-interface messages
expect_text "$tmp/err" "--fpga-interface needs --fabric fpga"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric fpga --device xrt:0 --xclbin "$tmp/none.xclbin"
expect_text "$tmp/err" "--device hwemu"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --device model
expect_text "$tmp/err" "--device needs --fabric fpga; this run is on --fabric software"
# The real-time fabrics (--fabric socket, --fabric dpdk) from the command line: test_cli_realtime.sh.
# a straggler makes it slower: the compare gate fails
printf 'topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' > "$tmp/ring8.yml"
expect_status 0 "$fabemu" run -w "$tmp/mlp/mlp" -n "$tmp/ring8.yml" -s "$tmp/sys.json" -q -r "$tmp/base.json"
expect_status 0 "$fabemu" run -w "$tmp/mlp/mlp" -n "$tmp/ring8.yml" -s "$tmp/sys.json" -q -r "$tmp/slow.json" --compute-scale 3=1.1
expect_status 1 "$fabemu" compare "$tmp/base.json" "$tmp/slow.json" --max-regression 5
expect_status 0 "$fabemu" compare "$tmp/base.json" "$tmp/slow.json" --max-regression 15
# run: bad usage and bad input exit 2 with a message naming what is wrong
expect_status 2 "$fabemu" run -w "$ar"
expect_text "$tmp/err" "--fabric-config or --network"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" --compute-scale 9=2
expect_text "$tmp/err" "--compute-scale 9=2: \"9\" is not a rank of the workload (0..3)"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -f "$src/traces/samples/fabric_2d.yaml"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/absent.yml"
expect_text "$tmp/err" "absent.yml"
expect_status 2 "$fabemu" run -w "$tmp/mlp/mlp" -n "$tmp/ring4.yml"
expect_text "$tmp/err" "the workload has 8 ranks but the network"
# run: a deadlock (rank 3 never issues the all-reduce) ends with exit 1 and says who waits on what
expect_status 0 "$fabemu" trace convert "$ar.3.et" "$tmp/r3.json"
sed 's/"COMM_COLL_NODE"/"COMP_NODE"/' "$tmp/r3.json" > "$tmp/r3b.json"
grep -q COMP_NODE "$tmp/r3b.json" || fail "could not rewrite the node type"
expect_status 0 "$fabemu" trace convert "$tmp/r3b.json" "$ar.3.et"
expect_status 1 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" -r "$tmp/dead.json"
expect_text "$tmp/err" "the workload deadlocked"
expect_text "$tmp/err" "3 of 4 members issued it; never issued by ranks 3"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert any("never issued by ranks 3" in x for x in d["stuck"]), d["stuck"]' "$tmp/dead.json"
expect_text "$tmp/out" "DEADLOCK: the workload cannot finish"

if [ -d "$shared" ]; then
  chakra="$shared/mlcommons-chakra/chakra.0.et"
  expect_status 0 "$fabemu" trace validate "$chakra"
  expect_text "$tmp/out" "1277 dependencies name node ids that are not in the file"
  expect_text "$tmp/out" "first issuable node ids: 216, 432, 541, 619, 1634"
  expect_status 1 "$fabemu" trace validate --strict "$chakra"
  expect_status 0 "$fabemu" trace convert --from astra-text "$shared/astra-sim-text/Resnet50_DataParallel.txt" "$tmp/r/resnet50" --ranks 64
  cmp "$tmp/r/resnet50.63.et" "$shared/astra-sim-text/resnet50_dp_N64/resnet50.63.et" || fail "astra-text conversion differs"
  # custom collective implementations (docs/custom_collectives.md): ASTRA-sim's custom ring all-reduce at its
  # 90,174 ns on both models; its MSCCL-IR XML converted, named by a system file beside it (a relative path)
  cmb="$shared/astra-sim/examples/workload/microbenchmarks/all_reduce/8npus_1MB/all_reduce"
  ccfg="$(dirname "$shared")/configs/astra-sim"
  cdir="$shared/astra-sim/examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB"
  for model in analytical packet; do
    expect_status 0 "$fabemu" run -w "$cmb" -n "$ccfg/Ring_8npus.yml" -s "$ccfg/system_custom_allreduce.json" -m $model -q \
      -r "$tmp/custom_$model.json"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); t=r["total_time_ps"]; assert abs(t-90174000) <= 90174000*0.002, t; assert r["collectives"][0]["algorithm"]=="custom"' \
      "$tmp/custom_$model.json" || fail "the custom all-reduce on the $model model is not ASTRA-sim's 90,174 ns"
  done
  for fpga in "--device model" "--fpga-interface messages"; do  # the FPGA fabrics carry its messages too
    expect_status 0 "$fabemu" run -w "$cmb" -n "$ccfg/Ring_8npus.yml" -s "$ccfg/system_custom_allreduce.json" --fabric fpga \
      $fpga -q -r "$tmp/custom_fpga.json"
    python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:3]); assert a["total_time_ps"] == b["total_time_ps"] and b["collectives"][0]["messages"] == 112, b["total_time_ps"]' \
      "$tmp/custom_packet.json" "$tmp/custom_fpga.json" || fail "the custom all-reduce on --fabric fpga $fpga is not the packet model's"
  done
  expect_status 0 "$fabemu" trace convert --from msccl-xml "$cdir/custom_allreduce.xml" -o "$tmp/cx/impl" --bytes 1MiB
  expect_text "$tmp/out" "8 rank files (allreduce of 1048576 bytes)"
  printf '{"scheduling-policy": "FIFO", "preferred-dataset-splits": 1, "local-mem-bw": 50,\n"all-reduce-implementation-custom": ["cx/impl"]}' > "$tmp/sys_custom.json"
  expect_status 0 "$fabemu" run -w "$cmb" -n "$ccfg/Ring_8npus.yml" -s "$tmp/sys_custom.json" -q -r "$tmp/custom_cx.json"
  python3 -c 'import json,sys; a,b=(json.load(open(f))["total_time_ps"] for f in sys.argv[1:3]); assert a == b, (a, b)' \
    "$tmp/custom_analytical.json" "$tmp/custom_cx.json" || fail "the converted XML does not give the .et files' time"
  printf '{"preferred-dataset-splits": 1,\n"all-reduce-implementation-custom": ["cx/nowhere"]}' > "$tmp/sys_custom.json"
  expect_status 2 "$fabemu" run -w "$cmb" -n "$ccfg/Ring_8npus.yml" -s "$tmp/sys_custom.json"
  expect_text "$tmp/err" "sys_custom.json: line 2: key \"all-reduce-implementation-custom\": custom implementation \"cx/nowhere\" not found"
else
  echo "shared traces absent: shared-trace CLI checks skipped"
fi
# generate llm: a 3-D plan (TP x PP x DP, ZeRO-1, sequence parallel) validates, with and without its
# comm-group file; a preset at 64 ranks; bad plans exit 2 naming the option
expect_status 0 "$fabemu" trace generate llm --layers 4 --hidden 64 --ffn 128 --heads 8 --kv-heads 4 --vocab 256 \
  --seq 32 --global-batch 8 --tp 2 --pp 2 --dp 2 --zero 1 --sequence-parallel -o "$tmp/llm/w"
expect_text "$tmp/out" "wrote 8 rank files"
expect_text "$tmp/out" "2 distinct graphs"
expect_status 0 "$fabemu" trace validate "$tmp/llm/w"
[ "$(tail -n 1 "$tmp/out")" = "VALID" ] || fail "generated llm workload is not VALID"
expect_status 0 "$fabemu" trace validate --comm-groups "$tmp/llm/w.comm_groups.json" "$tmp/llm/w"
python3 - "$tmp/llm/w.comm_groups.json" "$tmp/llm/w.plan.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1])); p = json.load(open(sys.argv[2]))
assert sorted(g.values()) == [[0, 1], [0, 2], [1, 3], [2, 3], [4, 5], [4, 6], [5, 7], [6, 7]], g
assert [g[n] for n in p["groups_by_kind"]["tp"]] == [[0, 1], [2, 3], [4, 5], [6, 7]], p["groups_by_kind"]
assert p["parallel"]["microbatches"] == 4 and p["output"]["rank_files"] == 8, p
PY
expect_status 0 "$fabemu" trace generate llm --preset llama3-8b --tp 8 --pp 4 --ranks 64 --global-batch 16 -q -o "$tmp/llama/w"
expect_text "$tmp/out" "wrote 64 rank files"
expect_status 0 "$fabemu" trace validate "$tmp/llama/w"
expect_status 2 "$fabemu" trace generate llm --preset llama3-8b --tp 3 --ranks 24 -o "$tmp/bad/w"
expect_text "$tmp/err" "--heads 32 is not divisible by --tp 3"
expect_status 2 "$fabemu" trace generate llm --preset llama3-8b --pp 5 --dp 1 -o "$tmp/bad/w"
expect_text "$tmp/err" "--layers 32 is not divisible by --pp 5"
expect_status 2 "$fabemu" trace generate llm --preset gpt3-175b --tp 8 --pp 16 --ranks 1000 -o "$tmp/bad/w"
expect_text "$tmp/err" "--ranks 1000 is not a multiple of tp x pp x ep = 8 x 16 x 1 = 128"
[ ! -e "$tmp/bad" ] || fail "a rejected plan left files behind"
echo "cli: all checks passed"
