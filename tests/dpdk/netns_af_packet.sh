#!/usr/bin/env bash
# Runs AfPacket.* of test_dpdk_env inside a network namespace this script creates (fabemu-t<pid>), with
# both ends of a veth pair in it (198.18.0.1/24, 198.18.0.2/24), captures the receiving end with tcpdump
# and checks the frames are well-formed UDP; always deletes the namespace. Exit 77 (skip) when network
# namespaces cannot be created here. Usage: netns_af_packet.sh <test_dpdk_env binary>
set -u
bin=${1:?usage: netns_af_packet.sh <test_dpdk_env binary>}
frames=2000   # AfPacket.VethPairInOurNamespace sends this many
ns=fabemu-t$$
a=fe-veth-a
b=fe-veth-b

. "$(dirname "$0")/netns_common.sh"

if command -v tcpdump >/dev/null; then
  ip netns exec "$ns" tcpdump -i "$b" -U -B 32768 -s 0 -w "$tmp/cap.pcap" udp >"$tmp/tcpdump.log" 2>&1 &
  tcpdump_pid=$!
  for _ in $(seq 50); do grep -q "listening on" "$tmp/tcpdump.log" && break; sleep 0.1; done
fi

FABEMU_AF_PACKET_IFACES="$a,$b" ip netns exec "$ns" "$bin" --gtest_filter='AfPacket.*' >"$tmp/test.log" 2>&1
rc=$?
cat "$tmp/test.log"
[ $rc -eq 0 ] || fail "test binary exited with $rc"
grep -q '\[  SKIPPED \]' "$tmp/test.log" && fail "AfPacket test skipped inside the namespace"
grep -q '\[  PASSED  \] 1 test' "$tmp/test.log" || fail "AfPacket test did not pass"

if [ -n "$tcpdump_pid" ]; then
  # tcpdump writes what its socket received at its own pace: wait (up to 20 s) until all frames are in
  # the file before stopping it (a stop throws away what it has not written yet).
  for _ in $(seq 200); do
    [ "$(tcpdump -r "$tmp/cap.pcap" 2>/dev/null | wc -l)" -ge "$frames" ] && break
    sleep 0.1
  done
  kill "$tcpdump_pid"; wait "$tcpdump_pid" 2>/dev/null; tcpdump_pid=
  # -vv makes tcpdump verify the IPv4 and UDP checksums.
  tcpdump -nn -vv -r "$tmp/cap.pcap" 2>/dev/null >"$tmp/cap.txt"
  total=$(grep -c '198\.18\.0\.1\.47000 > 198\.18\.0\.2\.47000: \[udp sum ok\] UDP' "$tmp/cap.txt")
  bad=$(grep -c 'bad cksum\|bad udp cksum' "$tmp/cap.txt")
  ip_packets=$(grep -c 'IP (tos' "$tmp/cap.txt")
  echo "tcpdump: $total well-formed fabemu UDP frames of $ip_packets IPv4 packets captured on $b, $bad with bad checksums"
  [ "$total" -eq "$frames" ] || { head -4 "$tmp/cap.txt"; cat "$tmp/tcpdump.log"; fail "tcpdump saw $total of $frames frames"; }
  [ "$ip_packets" -eq "$frames" ] || { grep -v 'udp sum ok' "$tmp/cap.txt" | head -6; fail "the capture holds packets that are not well-formed fabemu UDP"; }
  [ "$bad" -eq 0 ] || fail "bad checksums in the capture"
else
  echo "note: tcpdump not installed, capture check skipped"
fi
echo "PASS"
