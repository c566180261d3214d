#!/usr/bin/env bash
# Bad and hostile input on the command line (issue 44, items 9, 10, 11, 12, 22, 23): every error names the
# file and the key (or rank and node), and says what to do. Usage: test_cli_input.sh FABEMU SHARED_TRACES_DIR
set -euo pipefail
fabemu=$1
shared=$2
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

expect_status 0 "$fabemu" trace generate collective --type all_reduce --ranks 4 --size 1MiB -o "$tmp/ar/ar"
ar="$tmp/ar/ar"
printf 'topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' > "$tmp/ring4.yml"

# item 9: a network too large for memory is refused up front, naming the key and the memory
printf 'topology: [ Ring ]\nnpus_count: [ 1000000000 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' > "$tmp/huge.yml"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/huge.yml" -q
expect_text "$tmp/err" "huge.yml: line 2: key \"npus_count\": the network has 1000000000 NPUs and 2000000000 links, which would need about 119.2 GiB of memory with the analytical model and 186.3 GiB with the packet model"
printf 'topology: {type: FatTree, hosts_per_leaf: 4, leaves: 65536, spines: 4096, host_bandwidth_gbps: 400, host_latency_ns: 1}\n' > "$tmp/ft.yaml"
expect_status 2 "$fabemu" run -w "$ar" -f "$tmp/ft.yaml" -q
expect_text "$tmp/err" "ft.yaml: line 1: keys \"hosts_per_leaf\", \"leaves\" and \"spines\" of \"topology\": the network has 262144 NPUs and 537395200 links"

# item 10: chunk keys past 2^31 were truncated (2^32+1 ran as 1)
printf '{\n  "preferred-dataset-splits": 4294967297\n}\n' > "$tmp/splits.json"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/splits.json" -q
expect_text "$tmp/err" "splits.json: line 2: key \"preferred-dataset-splits\": expected an integer from 1 to 65536 (chunks per collective); got 4294967297"
printf 'topology: [{type: Ring, npus: 4, bandwidth_gbps: 400, latency_ns: 500}]\nactive_chunks: 2147483648\n' > "$tmp/chunks.yaml"
expect_status 2 "$fabemu" run -w "$ar" -f "$tmp/chunks.yaml" -q
expect_text "$tmp/err" "chunks.yaml: line 2: key \"active_chunks\": expected an integer from 1 to 65536"

# item 12: errors that named no file or key
printf '{\n  "endpoint-delay": 10,\n  "local-mem-bw": 1e400\n}\n' > "$tmp/overflow.json"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/overflow.json" -q
expect_text "$tmp/err" "overflow.json: line 3: key \"local-mem-bw\": number overflow parsing '1e400'"
printf '{"local-mem-bw": 1e-12}\n' > "$tmp/slow.json"
expect_status 2 "$fabemu" run -w "$ar" -n "$tmp/ring4.yml" -s "$tmp/slow.json" -q
expect_text "$tmp/err" "slow.json: line 1: key \"local-mem-bw\": expected a number from 0.001 to 1000000 (GB/s"

# item 22: files that are no Chakra trace say what they are and what to do
expect_status 0 "$fabemu" trace convert "$ar.0.et" "$tmp/a.json"
cp "$tmp/a.json" "$tmp/j.0.et"
expect_status 2 "$fabemu" run -w "$tmp/j.0.et" -n "$tmp/ring4.yml" -q
expect_text "$tmp/err" "j.0.et: rank 0: byte 0: not a Chakra trace: it looks like a JSON Lines trace (fabemu's JSON form, the GlobalMetadata on line 1); convert it first: fabemu trace convert --from json"
printf 'DATA\n1\nconv1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1024 10\n' > "$tmp/w.txt"
expect_status 2 "$fabemu" trace convert "$tmp/w.txt" "$tmp/w"
expect_text "$tmp/err" "w.txt: byte 0: not a Chakra trace: it looks like an ASTRA-sim text workload (line 1 names the parallelism, \"DATA\"); convert it first: fabemu trace convert --from astra-text"
expect_status 1 "$fabemu" trace validate /etc/passwd
expect_text "$tmp/out" "error: /etc/passwd: rank 0: byte 0: not a Chakra trace: it is a text file (it starts \""

# item 11: a small gzip whose one node has 10^8 data_deps is refused before it is read
python3 - "$tmp/h.0.et.gz" <<'PY'
import gzip, sys
def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7f) | 0x80); v >>= 7
    out.append(v); return bytes(out)
n = 100_000_000
head = b"\x08\x07\x18\x04" + varint(5 << 3 | 2) + varint(n)
with gzip.open(sys.argv[1], "wb", compresslevel=9) as f:
    f.write(b"\x07\x0a\x050.0.4" + varint(len(head) + n) + head)
    piece = b"\x01" * (1 << 20)
    for i in range(0, n, len(piece)):
        f.write(piece[: min(len(piece), n - i)])
PY
expect_status 1 "$fabemu" trace validate "$tmp/h.0.et.gz"
expect_text "$tmp/out" "h.0.et.gz: rank 0: byte 8: node #0: a Node of 100000009 bytes is declared: more than the 64 MiB limit"

# item 11: running out of memory is an error naming the file, rank and node, not a bare std::bad_alloc.
# 200 nodes of 2^20 data_deps each (the most a node may have) held at once by the dependency walk: 1.6 GB,
# under an address-space limit of 600 MB. (Skipped where the limit stops fabemu itself, as under ASan.)
if (ulimit -v 600000; "$fabemu" --version) >/dev/null 2>&1; then
  python3 - "$tmp/m.0.et.gz" <<'PY'
import gzip, sys
def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7f) | 0x80); v >>= 7
    out.append(v); return bytes(out)
deps = 1 << 20
with gzip.open(sys.argv[1], "wb", compresslevel=6) as f:
    f.write(b"\x07\x0a\x050.0.4")
    for node_id in range(2, 202):
        body = b"\x08" + varint(node_id) + b"\x18\x04" + varint(5 << 3 | 2) + varint(deps) + b"\x01" * deps
        f.write(varint(len(body)) + body)
PY
  set +e; (ulimit -v 600000; "$fabemu" trace validate "$tmp/m.0.et.gz") >"$tmp/out" 2>"$tmp/err"; got=$?; set -e
  [ "$got" -eq 1 ] || { cat "$tmp/out" "$tmp/err" >&2; fail "validate under a memory limit exited $got, expected 1"; }
  expect_text "$tmp/out" "error: $tmp/m.0.et.gz: rank 0: byte "
  expect_text "$tmp/out" "out of memory"
else
  echo "an address-space limit stops fabemu itself (ASan): the out-of-memory check is skipped"
fi

# item 23: validate --strict reports every dependency problem, 20 of each kind shown, all counted
if [ -d "$shared" ]; then
  chakra="$shared/mlcommons-chakra/chakra.0.et"
  expect_status 1 "$fabemu" trace validate --strict "$chakra"
  expect_text "$tmp/out" "3664 nodes: 2214 errors, 1 warning"
  expect_text "$tmp/out" "... and 1257 more like the above (dangling dependency)"
  expect_text "$tmp/out" "... and 363 more like the above (self dependency)"
  expect_text "$tmp/out" "... and 534 more like the above (forward ctrl_dep)"
  [ "$(grep -c '^error: ' "$tmp/out")" -eq 63 ] || fail "validate --strict printed $(grep -c '^error: ' "$tmp/out") error lines, expected 63"
else
  echo "shared traces absent: shared-trace CLI checks skipped"
fi
echo "cli input: all checks passed"
