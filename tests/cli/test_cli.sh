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
expect_status 0 "$fabemu" trace generate collective --type all_reduce --ranks 4 --size 1MiB --out-dir "$tmp/ar"
ar="$tmp/ar/all_reduce/4npus_1MB/all_reduce"
printf 'topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' > "$tmp/ring4.yml"
cat > "$tmp/sys.json" <<'EOF2'
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1, "preferred-dataset-splits": 4,
 "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"], "reduce-scatter-implementation": ["ring"],
 "all-to-all-implementation": ["ring"], "collective-optimization": "localBWAware", "local-mem-bw": 1600}
EOF2
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
# --metrics on a single-host socket or DPDK run: the run's counters served while it runs (dilation 20000: ~0.9 s)
for fab in socket dpdk; do
  "$fabemu" run --help | grep -q -- "--dpdk-port" || [ "$fab" = socket ] || continue  # a build without DPDK
python3 - "$fabemu" "$ar" "$tmp" "$fab" <<'EOF2' || fail "--fabric $fab --metrics"
import re, subprocess, sys, time, urllib.request
fabemu, ar, tmp, fab = sys.argv[1:5]
p = subprocess.Popen([fabemu, "run", "-w", ar, "-n", tmp + "/ring4.yml", "-s", tmp + "/sys.json", "--fabric", fab,
                      "--dilation", "20000", "--metrics", "127.0.0.1:0", "-r", tmp + "/sock_metrics.json"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
m, seen = None, []
while m is None and len(seen) < 50:  # (EAL may print first)
    seen.append(p.stderr.readline())
    m = re.search(r"metrics on (http://127\.0\.0\.1:\d+/metrics)", seen[-1])
assert m, seen
body, t0 = "", time.time()
while time.time() - t0 < 20:
    body = urllib.request.urlopen(m.group(1), timeout=5).read().decode()
    if re.search(r'fabemu_messages_sent_total\{role="run",fabric="%s"\} [1-9]' % fab, body):
        break
    time.sleep(0.05)
assert 'fabemu_running{role="run",fabric="%s"}' % fab in body, body
assert re.search(r'fabemu_messages_sent_total\{role="run",fabric="%s"\} [1-9]' % fab, body), body
assert re.search(r'fabemu_link_bytes_total\{role="run",fabric="%s",link="\d+"\} [1-9]' % fab, body), body
assert p.wait(timeout=60) == 0, p.stderr.read()
EOF2
done
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --metrics 127.0.0.1:0
expect_text "$tmp/err" "--metrics needs --agents, --fabric socket or --fabric dpdk; this run is on --fabric software"
# options of a fabric the run does not use, and options that contradict each other: errors, not ignored
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --pcap "$tmp/never.pcap"
expect_text "$tmp/err" "--pcap needs --fabric dpdk; this run is on --fabric software, which does not use it"
[ ! -e "$tmp/never.pcap" ] || fail "--pcap on the software fabric made a file"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric socket --roce
expect_text "$tmp/err" "--roce needs --fabric dpdk; this run is on --fabric socket"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --drop-rate 0.1
expect_text "$tmp/err" "--drop-rate needs --fabric dpdk or --fabric socket; this run is on --fabric software"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --socket-stall-timeout 5
expect_text "$tmp/err" "--socket-stall-timeout needs --fabric socket; this run is on --fabric dpdk"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dilation 5 --as-fast-as-possible
expect_text "$tmp/err" "--as-fast-as-possible is --dilation 0: give one of them, not both"
# a dilation the clocks' 1/65536 steps cannot keep within 0.1% (1e-5 would run at 1.526e-5)
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric socket --dilation 1e-5
expect_text "$tmp/err" "--dilation 1e-05: the real-time clocks run a dilation in steps of 1/65536, more than 0.1% off below 0.0076 (1e-05 would run at 1.52588e-05)"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dpdk-port memif --dpdk-devargs net_null0
expect_text "$tmp/err" "give one of them, not both"
# --dpdk-ring-delay and --dpdk-ring-rate set a device inside fabemu's own ring pair: not for memif,
# devices of the user's, or another fabric
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dpdk-port memif --dpdk-ring-delay 5
expect_text "$tmp/err" "--dpdk-ring-delay sets a device inside fabemu's in-process ring pair (--dpdk-port ring, the default): it does not apply to --dpdk-port memif"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dpdk-devargs net_null0 --dpdk-ring-rate 5
expect_text "$tmp/err" "--dpdk-ring-rate sets a device inside fabemu's in-process ring pair (--dpdk-port ring, the default): it does not apply to --dpdk-devargs"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --dpdk-ring-delay 5
expect_text "$tmp/err" "--dpdk-ring-delay needs --fabric dpdk; this run is on --fabric software"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric socket --dpdk-ring-rate 5
expect_text "$tmp/err" "--dpdk-ring-rate needs --fabric dpdk; this run is on --fabric socket"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dpdk-ring-delay -1
expect_text "$tmp/err" "--dpdk-ring-delay"
# the frames' TOS: a DSCP of 6 bits, an ECN codepoint a sender may send, a marking device needs a rate
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --wire-dscp 64
expect_text "$tmp/err" "--wire-dscp: Value 64 not in range 0 to 63"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --wire-ecn ce
expect_text "$tmp/err" "--wire-ecn: ce not in {not-ect,ect0,ect1}"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --wire-ecn ect0
expect_text "$tmp/err" "--wire-ecn needs --fabric dpdk or --fabric socket; this run is on --fabric software"
# a lab run takes its wire from the lab file: the single-host wire's options are refused (before the lab
# file is read), naming the lab file's key where there is one
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --agents "$tmp/no-lab.yaml" --wire-ecn ect0
expect_text "$tmp/err" "--wire-ecn does not apply to a lab run (--agents): the lab file's \"ecn\" sets the frames' ECN codepoint"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --agents "$tmp/no-lab.yaml" --roce
expect_text "$tmp/err" "--roce does not apply to a lab run (--agents): the lab file's \"wire: roce\" chooses RoCEv2 frames"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --agents "$tmp/no-lab.yaml" --drop-rate 0.01
expect_text "$tmp/err" "--drop-rate does not apply to a lab run (--agents), whose agents' socket fabric does not take it"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dpdk-ring-ecn 3000
expect_text "$tmp/err" "--dpdk-ring-ecn marks frames by the queue that builds behind the device's rate: give --dpdk-ring-rate too"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dpdk-port memif --dpdk-ring-rate 1 --dpdk-ring-ecn 3000
expect_text "$tmp/err" "sets a device inside fabemu's in-process ring pair (--dpdk-port ring, the default): it does not apply to --dpdk-port memif"
# --fabric dpdk (a ring pair in this process): the model's times, every byte reassembled, and the report's
# "dpdk" section with the measured-vs-modelled deviation of the one collective (dilation 1000)
if "$fabemu" run --help | grep -q -- '--dilation'; then
  expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dilation 1000 -r "$tmp/dpdk.json"
  grep -q "Measured vs modelled" "$tmp/out" || fail "--fabric dpdk printed no measured-vs-modelled section"
  python3 - "$tmp/dpdk.json" <<'EOF2' || fail "the --fabric dpdk report is wrong"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["total_time_ps"] == 43051456, r["total_time_ps"]
d = r["dpdk"]
assert d["messages"] == 96 and d["messages_completed"] == 96, d["messages"]
assert d["bytes_completed"] == d["message_bytes"] == 96 * 262144 // 4 * 1, (d["bytes_completed"], d["message_bytes"])
assert d["latency_ns"]["count"] == 96
assert d["jitter_ns"]["count"] == d["data_frames"]
assert d["settings"]["ahead_us"] == 20, d["settings"]
assert 0 <= d["frames_ahead"] <= d["data_frames"], d["frames_ahead"]
c = d["collectives"]
assert len(c) == 1 and c[0]["index"] == 0 and c[0]["messages"] == 96 and c[0]["modelled_ps"] > 0, c
assert c[0]["measured_ps"] > 0
EOF2
  # --dpdk-ahead 0: nothing built ahead, the same modelled time
  expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dilation 1000 --dpdk-ahead 0 \
    -r "$tmp/dpdk0.json"
  grep -q "none built ahead (--dpdk-ahead 0)" "$tmp/out" || fail "--dpdk-ahead 0: the departure jitter line does not say so"
  python3 - "$tmp/dpdk0.json" <<'EOF2' || fail "the --dpdk-ahead 0 report is wrong"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["total_time_ps"] == 43051456, r["total_time_ps"]
d = r["dpdk"]
assert d["settings"]["ahead_us"] == 0 and d["frames_ahead"] == 0, (d["settings"], d["frames_ahead"])
assert d["messages_completed"] == 96
EOF2
  # -q prints nothing, EAL's start-up lines included (a run without it shows them)
  cat "$tmp/out" "$tmp/err" | grep -q "EAL:" || fail "a --fabric dpdk run printed no EAL line: the -q check below proves nothing"
  expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk -q -r "$tmp/dpdkq.json"
  [ ! -s "$tmp/out" ] && [ ! -s "$tmp/err" ] || { cat "$tmp/out" "$tmp/err" >&2; fail "--fabric dpdk -q printed something"; }
  expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric software --dpdk-ahead 5
  expect_text "$tmp/err" "--dpdk-ahead needs --fabric dpdk"
  # check_device_report REPORT DELAY_NS BYTES_PER_SEC: a run through a device inside the ring pair has the
  # software model's time, names the device in dpdk.settings, and measured every message late (with a
  # latency, none faster than it on the wire) and the collective slower than modelled
  check_device_report() {
    python3 - "$@" <<'EOF2'
import json, sys
r = json.load(open(sys.argv[1]))
delay, rate = int(sys.argv[2]), int(sys.argv[3])
assert r["total_time_ps"] == 43051456, r["total_time_ps"]
d = r["dpdk"]
assert d["settings"]["ring_delay_ns"] == delay and d["settings"]["ring_bytes_per_sec"] == rate, d["settings"]
assert d["messages_completed"] == 96, d["messages_completed"]
assert d["late"] == 96 if delay else d["late"] > 0, d["late"]
assert d["latency_ns"]["min"] >= delay - 50000, d["latency_ns"]
c = d["collectives"]
assert len(c) == 1 and c[0]["measured_ps"] > c[0]["modelled_ps"] and c[0]["deviation"] > 0, c
EOF2
  }
  # a device of 2 ms inside the ring pair (--dpdk-ring-delay; the model: 500 ns, at dilation 1000 0.5 ms of
  # wall time, a step of the ring a few ms): the same modelled report, and what was
  # measured holds the device: no message faster than 2 ms on the wire, every one late, the collective's
  # measured span beyond its modelled one; the ports line names the device
  expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dilation 1000 \
    --dpdk-ring-delay 2000 -r "$tmp/dly.json"
  expect_text "$tmp/out" ", a -> b through a device of 2000.000 us latency, "
  check_device_report "$tmp/dly.json" 2000000 0 || fail "the --dpdk-ring-delay report is wrong"
  # a device of 1 Gb/s (--dpdk-ring-rate): the four links at dilation 1000 carry about 215 MB/s of wall
  # time together, the device 125 MB/s, so the collective is measured later than modelled
  expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dilation 1000 \
    --dpdk-ring-rate 1 -r "$tmp/rate.json"
  expect_text "$tmp/out" ", a -> b through a device of 1.000 Gb/s, "
  check_device_report "$tmp/rate.json" 0 125000000 || fail "the --dpdk-ring-rate report is wrong"
  # ECN-capable frames in DSCP 26 through a 1 Gb/s device that marks CE behind 30,000 bytes queued: the
  # links offer it more than it takes, so its queue builds and it marks; the DPDK section counts the CE
  # frames as the device marked them (every copy), the collective its first copies; every frame the
  # capture holds (data and ACK, as they left) carries TOS 0x6a (DSCP 26, ECT(0))
  expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dilation 1000 \
    --wire-dscp 26 --wire-ecn ect0 --dpdk-ring-rate 1 --dpdk-ring-ecn 30000 --pcap "$tmp/ecn.pcap" -r "$tmp/ecn.json"
  expect_text "$tmp/out" ", a -> b through a device of 1.000 Gb/s marking ECN-capable frames CE behind 30000 bytes queued, "
  expect_text "$tmp/out" "  traffic class       sent DSCP 26, ECT(0); data frames received: "
  python3 - "$tmp/ecn.json" "$tmp/ecn.pcap" <<'EOF2' || fail "the ECN report or capture is wrong"
import json, struct, sys
r = json.load(open(sys.argv[1]))
assert r["total_time_ps"] == 43051456, r["total_time_ps"]
d = r["dpdk"]
g = d["settings"]
assert (g["dscp"], g["ecn"], g["ring_ecn_bytes"]) == (26, "ect0", 30000), g
e = d["data_by_ecn"]
assert e["ce"] > 0 and e["ce"] == d["ring_ce_marked"], (e, d["ring_ce_marked"])
assert e["not_ect"] == 0 and e["ect1"] == 0 and d["dscp_changed"] == 0, (e, d["dscp_changed"])
assert e["ect0"] + e["ce"] >= d["data_frames"], (e, d["data_frames"])
ce = sum(c["ce_frames"] for c in d["collectives"])
assert 0 < ce <= e["ce"], (ce, e)
data = open(sys.argv[2], "rb").read()
at, frames = 24, 0
while at < len(data):
    incl = struct.unpack_from("<I", data, at + 8)[0]
    assert data[at + 16 + 15] == 0x6A, (frames, hex(data[at + 16 + 15]))
    at += 16 + incl
    frames += 1
assert frames == d["frames_tx"], (frames, d["frames_tx"])
EOF2
  # with an lcore on every CPU (EAL -l 0-<last CPU>) the device's thread shares one: a warning says so
  expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --as-fast-as-possible \
    --dpdk-ring-delay 100 -- --no-huge -m 512 --no-pci --no-shconf --file-prefix "fabemu-clid$$" --no-telemetry \
    -l "0-$(($(nproc) - 1))"
  expect_text "$tmp/out" "DPDK fabric: every CPU has an lcore, so the thread of the ring pair's device"
  # EAL arguments after -- reach the EAL untouched (-m is also fabemu's --model): a --vdev given there
  # is used by name by --dpdk-devargs (a net_ring vdev loops frames back)
  expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --as-fast-as-possible -q \
    -r "$tmp/vdev.json" --dpdk-devargs net_ring0 -- --no-huge -m 512 --no-pci --no-shconf --file-prefix "fabemu-cli$$" \
    --no-telemetry -l 0 --vdev net_ring0
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["total_time_ps"] == 43051456 and r["dpdk"]["messages_completed"] == 96' \
    "$tmp/vdev.json" || fail "--fabric dpdk on an EAL --vdev"
  # a run whose parent ignores SIGINT (a script's background job, nohup) keeps ignoring it: the run
  # (dilation 50000: about 2 s) ends normally, exit 0, not interrupted
  (trap '' INT; exec "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dilation 50000 -q \
    -r "$tmp/ign.json" -- --no-huge -m 512 --no-pci --no-shconf --file-prefix "fabemu-clii$$" --no-telemetry -l 0) \
    > "$tmp/out" 2> "$tmp/err" &
  pid=$!
  sleep 1
  kill -INT "$pid" 2> /dev/null || true
  set +e; wait "$pid"; got=$?; set -e
  [ "$got" -eq 0 ] || { cat "$tmp/err" >&2; fail "a run with SIGINT ignored by its parent exited $got after SIGINT"; }
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["total_time_ps"] == 43051456 and r["dpdk"]["messages_completed"] == 96' \
    "$tmp/ign.json" || fail "the run with SIGINT ignored"
  # SIGINT while EAL starts (sent as soon as EAL prints its first line, from within rte_eal_init): EAL
  # finishes, the run stops at once with exit 1, the interruption named and the report written (the
  # process used to die of the signal with EAL half started: exit 130)
  # (timeout: a background job of a script starts with SIGINT ignored, which the run keeps; timeout runs it
  # with the default action and forwards the SIGINT sent to it. stdbuf: EAL logs to stdout, which a pipe
  # would hold until the end)
  mkfifo "$tmp/eal_fifo"
  # (not -q: under it EAL prints errors only, and its start-up lines are the signal's cue)
  timeout -s INT 60 stdbuf -oL -eL "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dilation 50000 -r "$tmp/ealint.json" \
    -- --no-huge -m 512 --no-pci --no-shconf --file-prefix "fabemu-clie$$" --no-telemetry -l 0 > "$tmp/eal_fifo" 2>&1 &
  pid=$!
  # One reader to the end of the output: the run's first EAL line sends the signal.
  (sent=0; while IFS= read -r line; do
     printf '%s\n' "$line"
     case "$line" in EAL:*) [ "$sent" -eq 1 ] || { kill -INT "$pid" 2> /dev/null || true; sent=1; } ;; esac
   done) < "$tmp/eal_fifo" > "$tmp/err" &
  reader=$!
  for _ in $(seq 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2> /dev/null && { kill -KILL "$pid"; fail "a run sent SIGINT while EAL started is still running 10 s later"; }
  set +e; wait "$pid"; got=$?; set -e
  wait "$reader" || true
  rm -f "$tmp/eal_fifo"
  [ "$got" -eq 1 ] || { cat "$tmp/err" >&2; fail "a run sent SIGINT while EAL started exited $got, expected 1"; }
  expect_text "$tmp/err" "interrupted (SIGINT/SIGTERM)"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert any("run interrupted" in w for w in r["warnings"]), r["warnings"]' \
    "$tmp/ealint.json" || fail "the run interrupted while EAL started has no report saying so"
  # EAL's runtime directory of the run's prefix (root: /var/run/dpdk/<prefix>) is gone once it ends
  # (rte_eal_cleanup leaves it; a run of its own prefix each, every run used to leave one)
  if [ "$(id -u)" -eq 0 ]; then rundir=/var/run/dpdk; else rundir=${XDG_RUNTIME_DIR:-/tmp}/dpdk; fi
  [ ! -e "$rundir/fabemu-cli$$" ] || fail "EAL's runtime directory $rundir/fabemu-cli$$ was left behind"
  # a device whose driver refuses it (a pcap file that does not exist) is told apart from a name no
  # driver knows
  expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --as-fast-as-possible -q \
    --dpdk-devargs "net_pcap_cli0,rx_pcap=$tmp/no-such.pcap,tx_pcap=$tmp/tx.pcap" -- --no-huge -m 512 --no-pci \
    --no-shconf --file-prefix "fabemu-clip$$" --no-telemetry -l 0
  expect_text "$tmp/err" "its driver could not open it; the driver's message above says why"
  expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --as-fast-as-possible -q \
    --dpdk-devargs net_nonexistent0 -- --no-huge -m 512 --no-pci --no-shconf --file-prefix "fabemu-clin$$" --no-telemetry -l 0
  expect_text "$tmp/err" "no DPDK driver took it"
  # the receive side on an lcore of its own (EAL -l 0-1, --dpdk-rx-lcore auto): the same report as with
  # everything on the main lcore (--dpdk-rx-lcore off)
  for lc in auto off; do
    expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --as-fast-as-possible -q \
      --dpdk-rx-lcore $lc -r "$tmp/lc_$lc.json" -- --no-huge -m 512 --no-pci --no-shconf --file-prefix "fabemu-cli-$lc$$" \
      --no-telemetry -l 0-1
  done
  python3 - "$tmp/lc_auto.json" "$tmp/lc_off.json" <<'EOF2' || fail "--dpdk-rx-lcore: the reports differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
da, db = a.pop("dpdk"), b.pop("dpdk")
assert da["rx_lcore"] == 1 and db["rx_lcore"] == -1, (da["rx_lcore"], db["rx_lcore"])
assert da["rx_lcore_frames"] == da["data_frames"] + da["retransmissions"] > 0, da["rx_lcore_frames"]
assert da["messages_completed"] == db["messages_completed"] == 96
assert da["bytes_completed"] == db["bytes_completed"] == da["message_bytes"]
assert a["total_time_ps"] == 43051456
assert a == b, [k for k in a if a[k] != b.get(k)]
EOF2
  # two receive lcores (--dpdk-rx-lcore 1,2; three lcores on two cores: EAL --lcores), a queue of each port
  # per lcore on the ring pair and on memif: the same report, each lcore with its share of the data frames
  for port in ring memif; do
    expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --as-fast-as-possible \
      --dpdk-port $port --dpdk-rx-lcore 1,2 -r "$tmp/lc2_$port.json" -- --no-huge -m 512 --no-pci --no-shconf \
      --file-prefix "fabemu-cli-lc2$port$$" --no-telemetry --lcores 0@0,1@1,2@1
    expect_text "$tmp/out" "receive side on 2 lcores, a queue of port B each (lcore 1 on queue 0:"
  done
  python3 - "$tmp/lc_off.json" "$tmp/lc2_ring.json" "$tmp/lc2_memif.json" <<'EOF2' || fail "--dpdk-rx-lcore 1,2"
import json, sys
off, ring, memif = (json.load(open(f)) for f in sys.argv[1:4])
off.pop("dpdk")
for r in (ring, memif):
  d = r.pop("dpdk")
  lc = d["rx_lcores"]
  assert [(l["lcore"], l["queue"]) for l in lc] == [(1, 0), (2, 1)], lc
  # ranks 0 and 2 send on queue 0, 1 and 3 on queue 1: the ring all-reduce's equal shares
  assert lc[0]["frames"] > 0 and lc[1]["frames"] > 0, lc
  assert lc[0]["frames"] + lc[1]["frames"] == d["rx_lcore_frames"] == d["data_frames"] + d["retransmissions"], lc
  assert d["rx_lcore"] == 1 and d["messages_completed"] == 96 and d["bytes_completed"] == d["message_bytes"]
  assert r == off, [k for k in r if r[k] != off.get(k)]
EOF2
  # all: every worker lcore of EAL's (here lcores 1 and 2), as the list 1,2
  expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --as-fast-as-possible \
    --dpdk-rx-lcore all -r "$tmp/lc_all.json" -- --no-huge -m 512 --no-pci --no-shconf \
    --file-prefix "fabemu-cli-lcall$$" --no-telemetry --lcores 0@0,1@1,2@1
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["dpdk"]; assert [(l["lcore"], l["queue"]) for l in d["rx_lcores"]] == [(1, 0), (2, 1)] and d["messages_completed"] == 96, d["rx_lcores"]' \
    "$tmp/lc_all.json" || fail "--dpdk-rx-lcore all"
  for bad in 1, 1,,2 a,b -1 1,x 99999999999; do
    expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dpdk-rx-lcore "$bad" -q
    expect_text "$tmp/err" "expected auto, off, all, an lcore id (0-9999) or a comma list of lcore ids, got $bad"
  done
  expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dpdk-rx-lcore 1,1 -q -- \
    --no-huge -m 512 --no-pci --no-shconf --file-prefix "fabemu-cli-11$$" --no-telemetry --lcores 0@0,1@1,2@1
  expect_text "$tmp/err" "receive lcore 1 is listed twice"
  # transmit lcores (--dpdk-tx-lcore 2 and 2,3, the receive side on lcore 1; four lcores on two cores: EAL
  # --lcores): the report of --dpdk-tx-lcore off but the DPDK section, each transmit lcore with its share
  for tx in 2 2,3; do
    expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --as-fast-as-possible \
      --dpdk-rx-lcore 1 --dpdk-tx-lcore $tx -r "$tmp/tx_$tx.json" -- --no-huge -m 512 --no-pci --no-shconf \
      --file-prefix "fabemu-cli-tx$$" --no-telemetry --lcores 0@0,1@1,2@1,3@1
    expect_text "$tmp/out" "    transmit lcore 2  port A queue 0: "
  done
  python3 - "$tmp/lc_off.json" "$tmp/tx_2.json" "$tmp/tx_2,3.json" <<'EOF2' || fail "--dpdk-tx-lcore"
import json, sys
off, one, two = (json.load(open(f)) for f in sys.argv[1:4])
off.pop("dpdk")
for r, lanes in ((one, [(2, 0)]), (two, [(2, 0), (3, 1)])):
  d = r.pop("dpdk")
  lc = d["tx_lcores"]
  assert [(l["lcore"], l["queue"]) for l in lc] == lanes, lc
  assert all(l["frames"] > 0 and l["messages"] > 0 for l in lc), lc
  assert sum(l["frames"] for l in lc) == d["data_frames"] + d["retransmissions"], lc
  assert sum(l["data_frames"] for l in lc) == d["data_frames"] and sum(l["messages"] for l in lc) == d["messages"], lc
  assert d["rx_lcore"] == 1 and d["messages_completed"] == 96 and d["bytes_completed"] == d["message_bytes"]
  assert r == off, [k for k in r if r[k] != off.get(k)]
EOF2
  for bad in 2, 2,,3 a,b -1 2,x 99999999999; do
    expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dpdk-tx-lcore "$bad" -q
    expect_text "$tmp/err" "expected off, auto, all, an lcore id (0-9999) or a comma list of lcore ids, got $bad"
  done
  for bad in "0:not an idle worker lcore" "7:not an idle worker lcore" "1:lcore 1 is a receive lcore" \
             "2,2:lcore 2 is listed twice"; do
    expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dpdk-rx-lcore 1 \
      --dpdk-tx-lcore "${bad%%:*}" -q -- --no-huge -m 512 --no-pci --no-shconf --file-prefix "fabemu-cli-txb$$" \
      --no-telemetry --lcores 0@0,1@1,2@1,3@1
    expect_text "$tmp/err" "--dpdk-tx-lcore"
    expect_text "$tmp/err" "${bad#*:}"
  done
  # more transmit queues than the device has (net_pcap: one per tx_pcap file), and memif (which pairs queues)
  python3 -c 'import struct,sys; open(sys.argv[1],"wb").write(struct.pack("<IHHiIII",0xa1b2c3d4,2,4,0,0,65535,1))' \
    "$tmp/empty.pcap"
  expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dpdk-rx-lcore 1 \
    --dpdk-tx-lcore 2,3 --dpdk-devargs "net_pcap_txa,rx_pcap=$tmp/empty.pcap,tx_pcap=$tmp/txa.pcap" \
    --dpdk-devargs "net_pcap_txb,rx_pcap=$tmp/empty.pcap,tx_pcap=$tmp/txb.pcap" -q -- --no-huge -m 512 --no-pci \
    --no-shconf --file-prefix "fabemu-cli-txq$$" --no-telemetry --lcores 0@0,1@1,2@1,3@1
  expect_text "$tmp/err" "--dpdk-tx-lcore 2,3: 2 transmit lcores take 2 transmit queues of port A"
  expect_text "$tmp/err" "the device has at most 1 / 1"
  expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dpdk-port memif \
    --dpdk-rx-lcore 1 --dpdk-tx-lcore 2,3 -q -- --no-huge -m 512 --no-pci --no-shconf --file-prefix "fabemu-cli-txm$$" \
    --no-telemetry --lcores 0@0,1@1,2@1,3@1
  expect_text "$tmp/err" "--dpdk-tx-lcore 2,3: memif pairs each transmit queue"
  expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric socket --dpdk-tx-lcore 2 -q
  expect_text "$tmp/err" "--dpdk-tx-lcore needs --fabric dpdk"
  # an address plan with fewer ranks than the topology has NPUs: the error names the file
  printf 'ranks:\n  - {rank: 0, mac: "02:fe:00:00:00:01", ip: 198.18.0.1}\n' > "$tmp/plan1.yaml"
  expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --address-plan "$tmp/plan1.yaml" -q
  expect_text "$tmp/err" "$tmp/plan1.yaml: the address plan has ranks 0 to 0, the topology 4 NPUs"
  # a capture the file system cannot take (a 1 MB file size limit: ~6 MB of frames) stops, and the run goes
  # on: exit 2 after the summary and the whole report, which say what failed
  expect_status 2 bash -c 'ulimit -f 1000; exec "$@"' _ "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" \
    --fabric dpdk --as-fast-as-possible --pcap "$tmp/lim.pcap" -r "$tmp/lim.json"
  expect_text "$tmp/err" "fabemu: error: the --pcap capture failed: pcap $tmp/lim.pcap: cannot write: File too large"
  expect_text "$tmp/out" "capture failed      pcap $tmp/lim.pcap: cannot write: File too large"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); p=r["dpdk"]["pcap"]; assert r["total_time_ps"] == 43051456 and r["dpdk"]["messages_completed"] == 96 and "File too large" in p["error"] and any("capture failed" in w for w in r["warnings"]), (p, r["warnings"])' \
    "$tmp/lim.json" || fail "a failed --pcap capture lost the report"
  [ "$(stat -c %s "$tmp/lim.pcap")" -le 1024000 ] || fail "the capture went past the file size limit"
  # the payload checks: skipped on the in-process ring pair (auto), made with --dpdk-verify-checksums on, made on
  # an EAL vdev (not in-process: --dpdk-devargs above); the same report otherwise
  for vc in auto on; do
    expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --as-fast-as-possible -q \
      --dpdk-verify-checksums $vc -r "$tmp/vc_$vc.json" -- --no-huge -m 512 --no-pci --no-shconf \
      --file-prefix "fabemu-cli-vc$vc$$" --no-telemetry -l 0
  done
  python3 - "$tmp/vc_auto.json" "$tmp/vc_on.json" "$tmp/vdev.json" <<'EOF2' || fail "--dpdk-verify-checksums"
import json, sys
a, b, v = (json.load(open(f)) for f in sys.argv[1:4])
assert [c["checksums"] for c in a["dpdk"]["rx_clocks"]] == ["skipped", "skipped"], a["dpdk"]["rx_clocks"]
assert [c["checksums"] for c in b["dpdk"]["rx_clocks"]] == ["fabemu", "fabemu"], b["dpdk"]["rx_clocks"]
assert [c["checksums"] for c in v["dpdk"]["rx_clocks"]] == ["fabemu"], v["dpdk"]["rx_clocks"]
assert a["dpdk"]["messages_completed"] == b["dpdk"]["messages_completed"] == 96
assert a["total_time_ps"] == b["total_time_ps"] == 43051456
EOF2
  expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dpdk-verify-checksums off -q
  expect_text "$tmp/err" "dpdk-verify-checksums"
  expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dpdk-rx-lcore 0 -q -- \
    --no-huge -m 512 --no-pci --no-shconf --file-prefix "fabemu-cli-0$$" --no-telemetry -l 0-1
  expect_text "$tmp/err" "RX lcore 0"
  expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" -q -- -l 0
  expect_text "$tmp/err" "arguments after -- are EAL arguments"
  # EAL arguments EAL refuses: its usage text (stdout) comes first and our error is the last line, also
  # with both streams in one file
  set +e; "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk -q -- --no-huge --no-pci \
    --no-shconf --file-prefix "fabemu-cli-bad$$" --no-telemetry -l 7 >"$tmp/both" 2>&1; st=$?; set -e
  [ "$st" -eq 2 ] || fail "bad EAL arguments exited $st, expected 2"
  case "$(tail -n 1 "$tmp/both")" in
    "fabemu: error: EAL: rte_eal_init failed"*) ;;
    *) cat "$tmp/both" >&2; fail "the error is not the last line of the output on bad EAL arguments" ;;
  esac
  # EAL arguments without --no-huge: on a host without hugepages (this one, CI's) the error names the way
  # out; where hugepages are set up the run simply works
  set +e; "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --as-fast-as-possible -q -- \
    -l 0 --no-pci --no-shconf --file-prefix "fabemu-cli-huge$$" --no-telemetry >"$tmp/out" 2>"$tmp/err"; st=$?; set -e
  if [ "$st" -ne 0 ]; then
    [ "$st" -eq 2 ] || fail "EAL without hugepages exited $st, expected 2"
    expect_text "$tmp/err" "no usable hugepages? Reserve some and mount hugetlbfs"
    expect_text "$tmp/err" "or run without them: -- --no-huge -m 512"
  fi
  # the reliability settings: checked before EAL starts, and a run with them reports the RTO it was given
  expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dpdk-window 1000 -q
  expect_text "$tmp/err" "--dpdk-window: not a power of two"
  expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --dpdk-rto 200 \
    --dpdk-nack-delay 200 -q
  expect_text "$tmp/err" "--dpdk-rto 200 us must exceed --dpdk-nack-delay 200 us"
  expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --as-fast-as-possible -q \
    --dpdk-rto 20000 --dpdk-nack-delay 50 --dpdk-window 64 --drop-rate 0.02 -r "$tmp/rel.json" -- --no-huge -m 512 \
    --no-pci --no-shconf --file-prefix "fabemu-cli-rel$$" --no-telemetry -l 0
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["dpdk"]; assert d["rto_max_ps"] >= 20 * 10**9 and d["messages_completed"] == 96 and d["retransmissions"] >= d["injected_drops"] > 0, d' \
    "$tmp/rel.json" || fail "--dpdk-rto / --dpdk-nack-delay / --dpdk-window"
  python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["dpdk"]["settings"]; assert g == {"mode": "fabemu", "wire_mtu": 1500, "window": 64, "rto_us": 20000, "nack_delay_us": 50, "stall_timeout_ms": 10000, "drop_rate": 0.02, "reorder_rate": 0, "duplicate_rate": 0, "fault_seed": 1, "verify_checksums": "auto", "dscp": 0, "ecn": "not-ect", "ring_delay_ns": 0, "ring_bytes_per_sec": 0, "ring_ecn_bytes": 0, "ahead_us": 20}, g' \
    "$tmp/rel.json" || fail "the report's dpdk.settings"
  # a wire that brings nothing of ours back (--drop-rate 1: every data frame dropped on receive): the run
  # stops after --dpdk-stall-timeout with exit 2, the reason last on stderr, and the report still written:
  # the ranks unfinished, the frames sent, dpdk.stall naming the message and the fault injection
  expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --as-fast-as-possible \
    --drop-rate 1 --dpdk-stall-timeout 300 -r "$tmp/stall.json" -- --no-huge -m 512 --no-pci --no-shconf \
    --file-prefix "fabemu-cli-stall$$" --no-telemetry -l 0
  expect_text "$tmp/out" "  stalled             the run stopped: message "
  expect_text "$tmp/out" "run stopped at "
  case "$(tail -n 1 "$tmp/err")" in
    "fabemu: error: DPDK fabric: message "*"for 300 ms (--drop-rate 1: the fault injection drops all of the data frames that arrive); the report holds the run up to that point") ;;
    *) cat "$tmp/err" >&2; fail "a stalled run did not end with its reason" ;;
  esac
  python3 - "$tmp/stall.json" <<'EOF2' || fail "the report of a stalled run is wrong"
import json, sys
r = json.load(open(sys.argv[1]))
d = r["dpdk"]
assert d["stall"].startswith("message ") and "--drop-rate 1" in d["stall"], d["stall"]
assert d["messages_completed"] == 0 and d["frames_tx"] > 0 and d["frames_rx"] == d["injected_drops"], d
assert any(w.startswith("run stopped at ") for w in r["warnings"]), r["warnings"]
assert sum(w.startswith("stopped: rank ") for w in r["warnings"]) == 4, r["warnings"]
assert not any("not acknowledged at the end" in w for w in r["warnings"]), r["warnings"]
assert r["stuck"] == [], r["stuck"]
EOF2
  # the same timeline as the software packet model (as fast as possible: the walker sees the model's times)
  expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" -m packet -q --timeline "$tmp/tl_sw.json"
  expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --as-fast-as-possible -q \
    --timeline "$tmp/tl_dpdk.json"
  python3 -c 'import json,sys; a,b=(json.load(open(f))["traceEvents"] for f in sys.argv[1:3]); assert a == b and len(a) > 100, len(a)' \
    "$tmp/tl_sw.json" "$tmp/tl_dpdk.json" || fail "--fabric dpdk wrote another timeline than the packet model"
fi
# --fabric socket (one loopback UDP socket per rank): the packet model's times and timeline, every message
# sent and reassembled once; SIGINT mid-run (paced to last about 40 s) ends it within seconds with exit 1,
# the report written and the interruption named
expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" -m packet -q --timeline "$tmp/tl_model.json"
# (every datagram sent with DSCP 26 and ECT(0): each one received counted so, loopback marks nothing)
expect_status 0 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric socket --as-fast-as-possible -q \
  -r "$tmp/sock.json" --timeline "$tmp/tl_sock.json" --wire-dscp 26 --wire-ecn ect0
python3 - "$tmp/sock.json" "$tmp/tl_model.json" "$tmp/tl_sock.json" <<'EOF2' || fail "the --fabric socket report is wrong"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["total_time_ps"] == 43051456, r["total_time_ps"]
s = r["socket"]
assert s["messages_sent"] == s["messages_received"] == 96, s
assert s["bytes_sent"] == s["bytes_received"] == 96 * 262144 // 4, s
assert s["transport"] == "UDP DSCP 26 ECN ect0", s["transport"]
assert s["datagrams_rx"] > 0 and s["frames_by_ecn"] == {"not_ect": 0, "ect1": 0, "ect0": s["datagrams_rx"], "ce": 0}, s
assert s["frames_dscp_changed"] == 0, s
a, b = (json.load(open(f))["traceEvents"] for f in sys.argv[2:4])
assert a == b and len(a) > 100, len(a)
EOF2
"$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric socket --dilation 1000000 -q -r "$tmp/sock_int.json" \
  > "$tmp/out" 2> "$tmp/err" &
pid=$!
sleep 1.5
kill -INT "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
kill -0 "$pid" 2> /dev/null && { kill -KILL "$pid"; fail "--fabric socket still running 10 s after SIGINT"; }
set +e; wait "$pid"; got=$?; set -e
[ "$got" -eq 1 ] || { cat "$tmp/err" >&2; fail "--fabric socket interrupted exited $got, expected 1"; }
expect_text "$tmp/err" "interrupted (SIGINT/SIGTERM)"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert any("run interrupted" in w for w in r["warnings"]), r["warnings"]' \
  "$tmp/sock_int.json" || fail "the interrupted --fabric socket report does not say so"
# a wire that brings nothing (--drop-rate 1: every data datagram dropped on receive): the run stops after
# --socket-stall-timeout with exit 2, the reason last, and the report written: socket.stall, the warnings
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric socket --as-fast-as-possible \
  --drop-rate 1 --socket-stall-timeout 300 -r "$tmp/sock_stall.json"
expect_text "$tmp/out" "  stalled             the run stopped: message "
case "$(tail -n 1 "$tmp/err")" in
  "fabemu: error: socket fabric: message "*"but for 300 ms nothing arrived for it: it waits for its datagrams from rank "*" at 127.0.0.1:"*" (--drop-rate 1: the fault injection drops all of the data datagrams that arrive); the report holds the run up to that point") ;;
  *) cat "$tmp/err" >&2; fail "a stalled --fabric socket run did not end with its reason" ;;
esac
python3 - "$tmp/sock_stall.json" <<'EOF2' || fail "the report of a stalled --fabric socket run is wrong"
import json, sys
r = json.load(open(sys.argv[1]))
s = r["socket"]
assert s["stall"].startswith("message ") and "--drop-rate 1" in s["stall"], s["stall"]
assert s["messages_received"] == 0 and s["data_datagrams"] > 0 and s["injected_drops"] > 0, s
assert any(w.startswith("run stopped at ") for w in r["warnings"]), r["warnings"]
assert sum(w.startswith("stopped: rank ") for w in r["warnings"]) == 4, r["warnings"]
assert not any("not acknowledged at the end" in w for w in r["warnings"]), r["warnings"]
assert r["stuck"] == [], r["stuck"]
EOF2
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
