# Sourced by the namespace tests after they set ns (the namespace's name), and a and b (the veth ends) when
# they want the usual pair: creates the namespace with IPv6 off and, when a is set, both ends of a veth pair
# inside it (198.18.0.1/24 on a, 198.18.0.2/24 on b, up; without a the script builds its own links), a temp
# dir $tmp, and a trap that on exit stops the processes in $stop_pids (e.g. fabemu agents: a namespace is
# only gone once nothing runs in it), then the tcpdumps in $tcpdump_pid, and deletes both. Exits 77 (skip)
# when namespaces cannot be created here. Nothing touches the host's interfaces.
if ! command -v ip >/dev/null || ! ip netns add "$ns" 2>/dev/null; then
  echo "SKIP: cannot create a network namespace (ip netns add) on this machine"
  exit 77
fi
tmp=$(mktemp -d)
tcpdump_pid=
stop_pids=
cleanup() {
  if [ -n "$stop_pids" ]; then kill $stop_pids 2>/dev/null; wait $stop_pids 2>/dev/null; fi
  if [ -n "$tcpdump_pid" ]; then kill $tcpdump_pid 2>/dev/null; wait $tcpdump_pid 2>/dev/null; fi
  ip netns del "$ns" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "FAIL: $*"; exit 1; }

ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 \
  >/dev/null 2>&1 || true
if [ -n "${a:-}" ]; then
  ip -n "$ns" link add "$a" type veth peer name "$b" || fail "veth pair"
  ip -n "$ns" addr add 198.18.0.1/24 dev "$a" || fail "address on $a"
  ip -n "$ns" addr add 198.18.0.2/24 dev "$b" || fail "address on $b"
  ip -n "$ns" link set lo up && ip -n "$ns" link set "$a" up && ip -n "$ns" link set "$b" up || fail "link up"
fi
