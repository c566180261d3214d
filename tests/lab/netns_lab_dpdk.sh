#!/usr/bin/env bash
# A lab run over DPDK ports (lab.yaml `fabric: dpdk`) with real frames through the kernel: a network
# namespace this script creates (fabemu-l<pid>) and always deletes, holding a bridge br0 and three veth
# pairs, one end of each on the bridge, the other the DPDK port (net_af_packet) of one of three
# `fabemu agent`s, all in the namespace; the coordinator too. The shared 8-rank 1 MiB all-reduce split 3/3/2
# must give what a single-host `fabemu run -m packet` gives (total and every rank's finish), the lab section
# three agents on their veth's MACs, and tcpdump on br0 UDP frames with valid IPv4/UDP checksums between
# those MACs, each addressed per the lab address plan (198.18.0.1 + rank, UDP 47000, its agent's MAC).
# Exit 77 (skip) when network namespaces cannot be created or the shared traces are absent.
# Usage: netns_lab_dpdk.sh <fabemu binary> <shared folder (holds traces/ and configs/)>; FABEMU_SHARED_DIR, when
# set, is the shared folder (as for the C++ tests). WIRE=roce: lab.yaml `wire: roce`, the frames RoCEv2 (UDP
# 4791, a BTH with the rank's queue pair and a SEND opcode). DSCP=n, ECN=not-ect|ect0|ect1: lab.yaml `dscp`
# and `ecn`, every frame's TOS byte checked in the capture and the agents' counts by ECN codepoint.
set -u
wire=${WIRE:-fabemu}
dscp=${DSCP:-0}
ecn=${ECN:-not-ect}
fabemu=${1:?usage: netns_lab_dpdk.sh <fabemu binary> <shared folder>}
shared=${FABEMU_SHARED_DIR:-${2:?usage: netns_lab_dpdk.sh <fabemu binary> <shared folder>}}
w=$shared/traces/astra-sim/examples/workload/microbenchmarks/all_reduce/8npus_1MB/all_reduce
configs=$shared/configs/astra-sim
if [ ! -d "$(dirname "$w")" ] || [ ! -f "$configs/Ring_8npus.yml" ]; then
  echo "SKIP: the shared traces and configs are absent ($shared)"
  exit 77
fi
ns=fabemu-l$$

. "$(dirname "$0")/../dpdk/netns_common.sh"

workload=(-w "$w" -n "$configs/Ring_8npus.yml" -s "$configs/system_ring_4chunks.json")
"$fabemu" run "${workload[@]}" -m packet -q -r "$tmp/model.json" || fail "single-host run"

# br0 forwards at once (no STP); agent i's port is fe-lab<i>, its bridge end fe-br<i>. No addresses: the
# kernel answers nothing, so what crosses the bridge is the agents' frames only.
ip -n "$ns" link set lo up || fail "lo up"
ip -n "$ns" link add br0 type bridge forward_delay 0 stp_state 0 || fail "bridge"
ip -n "$ns" link set br0 up || fail "br0 up"
for i in 0 1 2; do
  # DPDK 22.11's af_packet joins a PACKET_FANOUT group numbered (pid ^ ifindex) & 0xffff, and joining
  # another socket's group on another device fails (EINVAL): with the agents' nearby pids and the veths'
  # consecutive indexes two agents could collide. Indexes 4096 apart make that need pids exactly 4096 apart.
  ip -n "$ns" link add "fe-lab$i" index $((0x1000 * (i + 1) + 0x100)) type veth peer name "fe-br$i" ||
    fail "veth pair $i"
  ip -n "$ns" link set "fe-br$i" master br0 || fail "fe-br$i on br0"
  ip -n "$ns" link set "fe-br$i" up && ip -n "$ns" link set "fe-lab$i" up || fail "veth $i up"
done

if command -v tcpdump >/dev/null; then
  # br0 in promiscuous mode (tcpdump's default) sees every frame it forwards, once, as it enters.
  ip netns exec "$ns" tcpdump -i br0 -U -B 65536 -s 0 -w "$tmp/lab.pcap" udp >"$tmp/tcpdump.log" 2>&1 &
  tcpdump_pid=$!
  for _ in $(seq 50); do grep -q "listening on" "$tmp/tcpdump.log" && break; sleep 0.1; done
else
  echo "tcpdump is not installed: the frames on br0 are not checked"
fi

printf 'fabemu-lab-dpdk-test-%s\n' $$ >"$tmp/lab.token"
chmod 600 "$tmp/lab.token"
names=(a b c)
ranks=(0-2 3-5 6-7)
ports=()
pids=()
for i in 0 1 2; do
  mkdir -p "$tmp/work$i"
  ip netns exec "$ns" "$fabemu" agent --listen 127.0.0.1:0 --token-file "$tmp/lab.token" --work-dir "$tmp/work$i" \
    --heartbeat-ms 200 --dpdk-device "net_af_packet$i,iface=fe-lab$i" -- --no-huge -m 256 --no-pci --no-shconf \
    --file-prefix "fabemu-lab$i-$$" --no-telemetry -l 0 >"$tmp/agent$i.out" 2>"$tmp/agent$i.err" &
  stop_pids="$stop_pids $!"
  pid=$!
  pids+=("$pid")
  port=
  for _ in $(seq 300); do
    port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$tmp/agent$i.out")
    [ -n "$port" ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$tmp/agent$i.err"; fail "agent ${names[$i]} (net_af_packet$i on fe-lab$i) did not start"; }
  ports+=("$port")
done

{
  echo "token_file: lab.token"
  echo "fabric: dpdk"
  echo "wire: $wire"
  echo "dscp: $dscp"
  echo "ecn: $ecn"
  echo "agents:"
  for i in 0 1 2; do
    # `data` is required by lab.yaml but unused with fabric dpdk (ranks are addressed by their host's port).
    printf '  - name: %s\n    control: 127.0.0.1:%s\n    data: 127.0.0.1:%s\n    ranks: %s\n' \
      "${names[$i]}" "${ports[$i]}" $((47000 + 100 * i)) "${ranks[$i]}"
  done
} >"$tmp/lab.yaml"

ip netns exec "$ns" "$fabemu" run --agents "$tmp/lab.yaml" "${workload[@]}" --as-fast-as-possible \
  -r "$tmp/lab.json" >"$tmp/run.out" 2>"$tmp/run.err"
rc=$?
sed -n '/^Lab /,$p' "$tmp/run.out"
if [ $rc -ne 0 ]; then
  cat "$tmp/run.err"
  for i in 0 1 2; do echo "--- agent ${names[$i]}"; tail -20 "$tmp/agent$i.err"; done
  fail "fabemu run --agents (fabric dpdk) exited with $rc"
fi

macs=()
for i in 0 1 2; do
  macs+=("$(ip -n "$ns" -o link show "fe-lab$i" | sed -n 's/.*link\/ether \([0-9a-f:]*\) .*/\1/p')")
done
python3 - "$tmp/lab.json" "$tmp/model.json" "$wire" "${macs[@]}" "$dscp" "$ecn" <<'EOF2' || fail "the lab report is wrong"
import json, sys
lab, model = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
roce = sys.argv[3] == "roce"
veth_macs = sys.argv[4:7]
dscp, ecn = int(sys.argv[7]), sys.argv[8]
ecn_key = {"not-ect": "not_ect", "ect0": "ect0", "ect1": "ect1"}[ecn]
assert lab["total_time_ps"] == model["total_time_ps"], (lab["total_time_ps"], model["total_time_ps"])
assert lab["total_time_ps"] > 0
finish = lambda report: {r["rank"]: r["finish_time_ps"] for r in report["ranks"]}
assert finish(lab) == finish(model), (finish(lab), finish(model))
assert len(finish(lab)) == 8
section = lab["lab"]
assert section["fabric"] == "dpdk", section["fabric"]
assert (section["wire"], section["dscp"], section["ecn"]) == (sys.argv[3], dscp, ecn), section
agents = section["agents"]
assert [a["name"] for a in agents] == ["a", "b", "c"], agents
assert [a["mac"] for a in agents] == veth_macs, ([a["mac"] for a in agents], veth_macs)
assert len(set(veth_macs)) == 3, veth_macs
sent = rx = not_ours = other_frames = 0
for a in agents:
  assert a["status"] == "done", (a["name"], a["status"])
  s = a["socket"]
  assert s["transport"].startswith("DPDK net_af_packet"), s["transport"]
  tos_suffix = "" if (dscp, ecn) == (0, "not-ect") else " DSCP %d ECN %s" % (dscp, ecn)
  assert s["transport"].endswith((" RoCEv2" if roce else "") + tos_suffix), s["transport"]
  assert (" RoCEv2" in s["transport"]) == roce, s["transport"]
  assert s["datagrams_tx"] > 0 and s["datagrams_rx"] > 0, (a["name"], s["datagrams_tx"], s["datagrams_rx"])
  sent += s["datagrams_tx"]; rx += s["datagrams_rx"]; not_ours += s["not_ours"]
  other_frames += s["frames_not_ours"]
  # Every frame that reached the agent for one of its ranks has the run's traffic class: a bridge marks nothing.
  by = s["frames_by_ecn"]
  assert by[ecn_key] > 0 and by[ecn_key] == sum(by.values()), (a["name"], by)
  assert s["frames_dscp_changed"] == 0, (a["name"], s["frames_dscp_changed"])
# Every datagram that reached a port for one of its ranks is ours; the frames for other ports are those the
# bridge flooded before it learnt a MAC (a few per agent), nothing else is on the bridge.
assert not_ours == 0, not_ours
assert other_frames <= 16 + rx // 100, (other_frames, rx)
print("lab report: total %d ps as the packet model, agents on %s, %d datagrams sent, %d received, %d other frames"
      % (lab["total_time_ps"], ", ".join(veth_macs), sent, rx, other_frames))
EOF2

if [ -n "$tcpdump_pid" ]; then
  # tcpdump writes at its own pace: wait (up to 20 s) until the file stops growing.
  last=-1
  for _ in $(seq 40); do
    n=$(tcpdump -r "$tmp/lab.pcap" 2>/dev/null | wc -l)
    [ "$n" -gt 0 ] && [ "$n" -eq "$last" ] && break
    last=$n
    sleep 0.5
  done
  kill $tcpdump_pid; wait $tcpdump_pid 2>/dev/null; tcpdump_pid=
  tcpdump -nn -vv -r "$tmp/lab.pcap" 2>/dev/null >"$tmp/lab.txt"
  bad=$(grep -c 'bad cksum\|bad udp cksum' "$tmp/lab.txt")
  [ "$bad" -eq 0 ] || { grep 'bad' "$tmp/lab.txt" | head -3; fail "$bad frames with bad IPv4/UDP checksums"; }
  python3 - "$tmp/lab.pcap" "$tmp/lab.json" "$wire" "${macs[@]}" "$dscp" "$ecn" <<'EOF2' || fail "the capture is wrong"
import json, struct, sys
cap, rep = sys.argv[1:3]
roce = sys.argv[3] == "roce"
macs = [bytes.fromhex(m.replace(":", "")) for m in sys.argv[4:7]]
tos = int(sys.argv[7]) << 2 | {"not-ect": 0, "ect1": 1, "ect0": 2}[sys.argv[8]]
owner = [0, 0, 0, 1, 1, 1, 2, 2]   # ranks 0-2 on a, 3-5 on b, 6-7 on c
sent = sum(a["socket"]["datagrams_tx"] for a in json.load(open(rep))["lab"]["agents"])
data = open(cap, "rb").read()
assert struct.unpack_from("<I", data, 0)[0] == 0xA1B2C3D4
off, frames, pairs = 24, 0, set()
while off < len(data):
  _, _, caplen, _ = struct.unpack_from("<IIII", data, off)
  f = data[off + 16: off + 16 + caplen]
  off += 16 + caplen
  frames += 1
  dst_mac, src_mac = f[0:6], f[6:12]
  assert struct.unpack_from("!H", f, 12)[0] == 0x0800, "not IPv4"
  assert f[14] == 0x45 and f[23] == 17, "not IPv4/UDP"
  assert f[15] == tos, "TOS %#x, not %#x" % (f[15], tos)
  src_ip, dst_ip = struct.unpack_from("!II", f, 26)
  src, dst = src_ip - 0xC6120001, dst_ip - 0xC6120001   # rank r at 198.18.0.1 + r
  assert 0 <= src < 8 and 0 <= dst < 8, "addresses %x -> %x outside the plan" % (src_ip, dst_ip)
  sport, dport = struct.unpack_from("!HH", f, 34)
  if roce:
    # RoCEv2: UDP 4791, then the BTH: a SEND opcode (Only/First/Middle/Last), destination QP = rank + 1.
    assert dport == 4791, dport
    assert f[42] in (0x00, 0x01, 0x02, 0x04), "BTH opcode %#x" % f[42]
    assert int.from_bytes(f[47:50], "big") == dst + 1, "BTH destination QP %d for rank %d" % (int.from_bytes(f[47:50], "big"), dst)
  else:
    assert dport == 47000, dport
  assert src_mac == macs[owner[src]], "rank %d's frame from %s, not its agent's port" % (src, src_mac.hex(":"))
  assert dst_mac == macs[owner[dst]], "rank %d's frame to %s, not its agent's port" % (dst, dst_mac.hex(":"))
  assert owner[src] != owner[dst], "ranks %d and %d share a host: their datagrams stay in it" % (src, dst)
  pairs.add((owner[src], owner[dst]))
assert frames > 0, "no frame crossed the bridge"
assert frames <= sent, (frames, sent)
# The ring crosses every agent boundary: 2 -> 3 (a -> b), 5 -> 6 (b -> c), 7 -> 0 (c -> a), ACKs back.
assert {(0, 1), (1, 2), (2, 0), (1, 0), (2, 1), (0, 2)} <= pairs, pairs
print("capture: %d %s frames on br0 between the agents' ports, valid IPv4/UDP checksums, addressed per rank, TOS %#x"
      % (frames, "RoCEv2" if roce else "UDP", tos))
EOF2
fi
# SIGTERM: each agent closes its port and exits 0, its run folder gone.
for i in 0 1 2; do kill -TERM "${pids[$i]}"; done
for i in 0 1 2; do
  wait "${pids[$i]}"
  rc=$?
  [ $rc -eq 0 ] || { tail -5 "$tmp/agent$i.err"; fail "agent ${names[$i]} exited with $rc on SIGTERM"; }
  [ -z "$(ls -A "$tmp/work$i")" ] || fail "agent ${names[$i]} left $(ls "$tmp/work$i") in its work folder"
done
stop_pids=
echo "PASS"
