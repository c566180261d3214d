#!/usr/bin/env bash
# `fabemu run --fabric dpdk --roce` with real frames through the kernel: net_af_packet on both ends of a
# veth pair inside a network namespace this script creates (fabemu-f<pid>; 198.18.0.1/24, 198.18.0.2/24)
# and always deletes. A 4-rank 1 MiB ring all-reduce must give the software packet model's total time,
# every byte reassembled; tcpdump captures the veth end and the capture is checked frame by frame:
# IPv4 and UDP checksums (tcpdump -vv), and in Python every field of the RoCEv2 BTH and the ICRC.
# Exit 77 (skip) when network namespaces cannot be created. Usage: netns_fabric.sh <fabemu binary>
set -u
fabemu=${1:?usage: netns_fabric.sh <fabemu binary>}
ns=fabemu-f$$
a=fe-fab-a
b=fe-fab-b

. "$(dirname "$0")/netns_common.sh"
command -v tcpdump >/dev/null || { echo "SKIP: tcpdump is not installed"; exit 77; }

"$fabemu" trace generate collective --type all_reduce --ranks 4 --size 1MiB --out-dir "$tmp/ar" >/dev/null \
  || fail "trace generate"
w="$tmp/ar/all_reduce/4npus_1MB/all_reduce"
printf 'topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' >"$tmp/ring4.yml"
cat >"$tmp/sys.json" <<'EOF2'
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1, "preferred-dataset-splits": 4,
 "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"], "reduce-scatter-implementation": ["ring"],
 "all-to-all-implementation": ["ring"], "collective-optimization": "localBWAware", "local-mem-bw": 1600}
EOF2
"$fabemu" run -w "$w" -n "$tmp/ring4.yml" -s "$tmp/sys.json" -m packet -q -r "$tmp/model.json" || fail "software run"

# Data frames go out on $a and arrive on $b; ACKs and NACKs the other way. DPDK's af_packet bypasses the
# qdisc, so a frame is captured where it arrives: data on $b, feedback on $a.
ip netns exec "$ns" tcpdump -i "$b" -Q in -U -B 65536 -s 0 -w "$tmp/data.pcap" udp port 4791 >"$tmp/tcpdump-b.log" 2>&1 &
tcpdump_pid=$!
ip netns exec "$ns" tcpdump -i "$a" -Q in -U -B 65536 -s 0 -w "$tmp/feedback.pcap" udp port 4791 >"$tmp/tcpdump-a.log" 2>&1 &
tcpdump_pid="$tcpdump_pid $!"
for _ in $(seq 50); do
  grep -q "listening on" "$tmp/tcpdump-a.log" && grep -q "listening on" "$tmp/tcpdump-b.log" && break
  sleep 0.1
done

ip netns exec "$ns" "$fabemu" run -w "$w" -n "$tmp/ring4.yml" -s "$tmp/sys.json" --fabric dpdk --roce \
  --as-fast-as-possible --dpdk-devargs "net_af_packet0,iface=$a" --dpdk-devargs "net_af_packet1,iface=$b" \
  -r "$tmp/dpdk.json" >"$tmp/run.log" 2>&1
rc=$?
sed -n '/^DPDK/,$p' "$tmp/run.log"
[ $rc -eq 0 ] || { cat "$tmp/run.log"; fail "fabemu run --fabric dpdk exited with $rc"; }
# The ports were put in promiscuous mode for the run (on af_packet: the kernel interfaces' IFF_PROMISC,
# which outlives the process) and are taken out of it again when they close.
for dev in "$a" "$b"; do
  ! ip -n "$ns" link show "$dev" | grep -q PROMISC || fail "$dev was left in promiscuous mode"
done

read -r ndata nfeedback < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["dpdk"]; print(d["data_frames"] + d["retransmissions"], d["acks"] + d["nacks"])' "$tmp/dpdk.json")
# tcpdump writes at its own pace: wait (up to 20 s) until every frame sent is in the files.
for _ in $(seq 200); do
  [ "$(tcpdump -r "$tmp/data.pcap" 2>/dev/null | wc -l)" -ge "$ndata" ] &&
    [ "$(tcpdump -r "$tmp/feedback.pcap" 2>/dev/null | wc -l)" -ge "$nfeedback" ] && break
  sleep 0.1
done
kill $tcpdump_pid; wait $tcpdump_pid 2>/dev/null; tcpdump_pid=
for f in data feedback; do
  tcpdump -nn -vv -r "$tmp/$f.pcap" 2>/dev/null >"$tmp/$f.txt"
  bad=$(grep -c 'bad cksum\|bad udp cksum' "$tmp/$f.txt")
  [ "$bad" -eq 0 ] || { grep 'bad' "$tmp/$f.txt" | head -3; fail "$bad $f frames with bad IPv4/UDP checksums"; }
done

python3 - "$tmp/data.pcap" "$tmp/feedback.pcap" "$tmp/dpdk.json" "$tmp/model.json" <<'EOF2' || fail "the capture or the report is wrong"
import json, struct, sys, zlib
data_cap, feedback_cap, rep, model = sys.argv[1:5]
r, m = json.load(open(rep)), json.load(open(model))
assert r["total_time_ps"] == m["total_time_ps"], (r["total_time_ps"], m["total_time_ps"])
d = r["dpdk"]
assert d["messages_completed"] == d["messages"] == 96, d["messages"]
assert d["bytes_completed"] == d["message_bytes"] == 96 * 65536, d["bytes_completed"]
# A clean link: the adaptive RTO follows the kernel path's latency (a fixed 10 ms resent a quarter of the
# frames spuriously here); a few early timeouts before it has samples are tolerated.
assert d["retransmissions"] * 10 < d["data_frames"], (d["retransmissions"], d["data_frames"])

def check(cap):
  data = open(cap, "rb").read()
  magic, = struct.unpack_from("<I", data, 0)
  assert magic == 0xA1B2C3D4, hex(magic)
  off, frames, opcodes = 24, 0, {}
  while off < len(data):
    _, _, caplen, _ = struct.unpack_from("<IIII", data, off)
    f = data[off + 16: off + 16 + caplen]
    off += 16 + caplen
    frames += 1
    assert struct.unpack_from("!H", f, 12)[0] == 0x0800, "not IPv4"
    ip = f[14:34]
    assert ip[0] == 0x45, "IPv4 header length"
    assert ip[9] == 17, "not UDP"
    src, dst = ip[12:16], ip[16:20]
    assert src[:2] == bytes([198, 18]) and dst[:2] == bytes([198, 18]), "address outside 198.18.0.0/15"
    sport, dport, ulen, _ = struct.unpack_from("!HHHH", f, 34)
    assert dport == 4791, dport
    bth = f[42:54]
    opcode, flags, pkey = bth[0], bth[1], struct.unpack_from("!H", bth, 2)[0]
    assert opcode in (0x00, 0x01, 0x02, 0x04), "opcode %#x is not an RC SEND" % opcode
    assert flags & 0x0F == 0, "transport header version %d" % (flags & 0x0F)
    assert pkey == 0xFFFF, "P_Key %#x" % pkey
    qp = int.from_bytes(bth[5:8], "big")
    assert 1 <= qp <= 4, "destination QP %d (rank + 1)" % qp
    # ICRC: CRC-32 of 8 bytes of 0xFF (the masked LRH), IP/UDP/BTH with their variant fields set to
    # 0xFF, and the rest up to the ICRC; little-endian after the UDP payload.
    end = 34 + ulen
    masked = bytearray(f[14:54])
    masked[1] = 0xFF; masked[8] = 0xFF; masked[10] = masked[11] = 0xFF
    masked[26] = masked[27] = 0xFF; masked[32] = 0xFF
    want = zlib.crc32(b"\xff" * 8 + bytes(masked) + f[54:end - 4]) & 0xFFFFFFFF
    got, = struct.unpack_from("<I", f, end - 4)
    assert got == want, "ICRC %#x, expected %#x (frame %d)" % (got, want, frames)
    opcodes[opcode] = opcodes.get(opcode, 0) + 1
  return frames, opcodes

nd, od = check(data_cap)
nf, of = check(feedback_cap)
assert nd == d["data_frames"] + d["retransmissions"], (nd, d["data_frames"], d["retransmissions"])
assert nf == d["acks"] + d["nacks"], (nf, d["acks"], d["nacks"])
print("capture: %d data frames (opcodes %s) and %d ACK/NACK frames, all RoCEv2 with valid IPv4/UDP checksums, BTH and ICRC"
      % (nd, od, nf))
EOF2

# Two receive lcores on two queue pairs of each af_packet port (README.md, "Several receive lcores") are
# refused: the kernel spreads the frames of port B's veth end over its two sockets by a hash of each flow
# (PACKET_FANOUT_HASH), but with PACKET_FANOUT_FLAG_ROLLOVER a flow's frames move to the other socket when
# one's ring fills, and a pair's frames must all reach one receive path. Three lcores on this machine's two
# cores: EAL --lcores.
"$fabemu" trace generate collective --type all_to_all --ranks 8 --size 1MiB --out-dir "$tmp/a2a" >/dev/null \
  || fail "trace generate all_to_all"
w8="$tmp/a2a/all_to_all/8npus_1MB/all_to_all"
printf 'topology: [ Switch ]\nnpus_count: [ 8 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' >"$tmp/sw8.yml"
"$fabemu" run -w "$w8" -n "$tmp/sw8.yml" -s "$tmp/sys.json" -m packet -q -r "$tmp/model8.json" || fail "software run (8 ranks)"
ip netns exec "$ns" "$fabemu" run -w "$w8" -n "$tmp/sw8.yml" -s "$tmp/sys.json" --fabric dpdk --as-fast-as-possible \
  --dpdk-devargs "net_af_packet2,iface=$a,qpairs=2" --dpdk-devargs "net_af_packet3,iface=$b,qpairs=2" \
  --dpdk-rx-lcore 1,2 -r "$tmp/dpdk8.json" \
  -- --lcores 0@0,1@1,2@1 --no-huge -m 512 --no-pci --no-shconf --file-prefix "fabemu-nsq-$$" --no-telemetry \
  >"$tmp/run8.log" 2>&1
rc=$?
# Refused: af_packet's fanout has PACKET_FANOUT_FLAG_ROLLOVER, which moves a flow's frames to the other
# queue whenever one socket's ring fills; a pair's frames must all reach one receive path.
[ $rc -eq 2 ] && grep -q 'fanout hash with rollover' "$tmp/run8.log" \
  || { cat "$tmp/run8.log"; fail "two receive lcores on net_af_packet were not refused (exit $rc)"; }

echo "PASS"
