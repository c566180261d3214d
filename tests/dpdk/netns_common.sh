# Sourced by the namespace tests after they set ns (the namespace's name), a and b (the veth ends): creates
# the namespace with both ends of a veth pair inside it (198.18.0.1/24 on a, 198.18.0.2/24 on b, IPv6
# off), a temp dir $tmp, and a trap that stops the tcpdumps in $tcpdump_pid and deletes both on exit.
# Exits 77 (skip) when namespaces cannot be created here. Nothing touches the host's interfaces.
if ! command -v ip >/dev/null || ! ip netns add "$ns" 2>/dev/null; then
  echo "SKIP: cannot create a network namespace (ip netns add) on this machine"
  exit 77
fi
tmp=$(mktemp -d)
tcpdump_pid=
cleanup() {
  if [ -n "$tcpdump_pid" ]; then kill $tcpdump_pid 2>/dev/null; wait $tcpdump_pid 2>/dev/null; fi
  ip netns del "$ns" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "FAIL: $*"; exit 1; }

ip -n "$ns" link add "$a" type veth peer name "$b" || fail "veth pair"
ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 \
  >/dev/null 2>&1 || true
ip -n "$ns" addr add 198.18.0.1/24 dev "$a" || fail "address on $a"
ip -n "$ns" addr add 198.18.0.2/24 dev "$b" || fail "address on $b"
ip -n "$ns" link set lo up && ip -n "$ns" link set "$a" up && ip -n "$ns" link set "$b" up || fail "link up"
