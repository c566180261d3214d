#!/usr/bin/env bash
# `fabemu bench collective` end to end: the table, JSON/CSV, --compare with a real nccl-tests output, and bad
# input (exit 2, the message names the file/option). Usage: test_bench.sh FABEMU SOURCE_DIR
set -euo pipefail
FABEMU=$1
SRC=$2
source "$(dirname "$0")/cli_lib.sh"
SYS=$SRC/traces/systems

# nccl-tests' table, with the tuner's choice per range.
expect_status 0 "$FABEMU" bench collective all_reduce -s "$SYS/a100_8x_nvswitch.yaml" -b 8 -e 64M -f 4
expect_text "$tmp/out" "#       size         count      type   redop    root     time   algbw   busbw #wrong"
[ "$(grep -cE '^ +[0-9]+ ' "$tmp/out")" -eq 12 ] || fail "expected 12 sizes (8 B .. 32 MiB by 4)"
expect_text "$tmp/out" "ring/LL"
expect_text "$tmp/out" "ring/Simple"
# 8 x A100, ring/LL at 8 B: the preset's 17 us call + 6.6 base + 14 hops x 0.6 us x 1.733 (the fitted LL hop
# scale) = 38.16 us.
expect_text "$tmp/out" "           8             2     float     sum      -1    38.16"

# ASTRA-sim's semantics: a fabemu run per size; its time is the run's collective duration, to the digit.
expect_status 0 "$FABEMU" bench collective all_gather -s "$SYS/p4de_2node_efa.yaml" --semantics astra -b 1M -e 1M \
  --json "$tmp/astra.json"
expect_text "$tmp/out" "astra:"
"$FABEMU" trace generate collective --type all_gather -n 16 --size 65536 -o "$tmp/ag/ag" >/dev/null
expect_status 0 "$FABEMU" run -w "$tmp/ag/ag" -f "$SYS/p4de_2node_efa.yaml" -q --report "$tmp/ag.json"
python3 - "$tmp/astra.json" "$tmp/ag.json" <<'PY' || fail "bench --semantics astra differs from fabemu run"
import json, sys
bench = json.load(open(sys.argv[1]))["rows"][0]
run = json.load(open(sys.argv[2]))["collectives"][0]
# all-gather: nccl-tests' size is the gathered whole = comm_size (65536) x 16 ranks
assert bench["size_bytes"] == 1048576, bench
duration_us = (run["finished_ps"] - run["issued_last_ps"]) / 1e6
assert abs(bench["time_us"] - duration_us) < 1e-9, (bench["time_us"], duration_us)
PY
expect_status 2 "$FABEMU" bench collective broadcast -s "$SYS/p4de_2node_efa.yaml" --semantics astra
expect_text "$tmp/err" "--semantics astra runs all_reduce, all_gather and reduce_scatter"
expect_status 2 "$FABEMU" bench collective -s "$SYS/p4de_2node_efa.yaml" -m packet
expect_text "$tmp/err" "--model applies to --semantics astra"

# collective_semantics: nccl in fabemu run: the collective takes the time bench collective prints, to the ps.
cp "$SYS/a100_8x_nvswitch.yaml" "$tmp/nccl.yaml"
echo "collective_semantics: nccl" >>"$tmp/nccl.yaml"
"$FABEMU" trace generate collective --type all_reduce -n 8 --size 1MB -o "$tmp/ar/ar" >/dev/null
expect_status 0 "$FABEMU" run -w "$tmp/ar/ar" -f "$tmp/nccl.yaml" --report "$tmp/nr.json"
expect_text "$tmp/out" "nccl:ring/LL"
expect_status 0 "$FABEMU" bench collective -s "$tmp/nccl.yaml" -b 1M -e 1M -q --json "$tmp/nb.json"
python3 - "$tmp/nb.json" "$tmp/nr.json" <<'PY' || fail "fabemu run in NCCL semantics differs from bench collective"
import json, sys
bench = json.load(open(sys.argv[1]))["rows"][0]
run = json.load(open(sys.argv[2]))["collectives"][0]
assert run["duration_ps"] == bench["time_ps"], (run["duration_ps"], bench["time_ps"])
PY
expect_status 2 "$FABEMU" run -w "$tmp/ar/ar" -f "$tmp/nccl.yaml" -m packet -q
expect_text "$tmp/err" "collective semantics nccl runs on the analytical model of --fabric software"
# --collective-semantics overrides the file's, both ways.
expect_status 0 "$FABEMU" run -w "$tmp/ar/ar" -f "$tmp/nccl.yaml" --collective-semantics astra
expect_text "$tmp/out" "ALL_REDUCE"
if grep -q "nccl:" "$tmp/out"; then fail "--collective-semantics astra still ran NCCL's"; fi
expect_status 0 "$FABEMU" run -w "$tmp/ar/ar" -f "$SYS/a100_8x_nvswitch.yaml" --collective-semantics nccl
expect_text "$tmp/out" "nccl:ring/LL"
expect_status 2 "$FABEMU" run -w "$tmp/ar/ar" -f "$SRC/traces/samples/fabric_2d.yaml" --collective-semantics nccl
expect_text "$tmp/err" "has no \"nccl:\" section"
# --nccl-algo / --nccl-proto (NCCL 2.24's lists) in fabemu run: the time bench collective gives with the same.
expect_status 0 "$FABEMU" run -w "$tmp/ar/ar" -f "$tmp/nccl.yaml" --nccl-algo "ring;allreduce:tree" \
  --nccl-proto allreduce:Simple --report "$tmp/nt.json"
expect_text "$tmp/out" "nccl:tree/Simple"
expect_status 0 "$FABEMU" bench collective -s "$tmp/nccl.yaml" -b 1M -e 1M -q --algo "ring;allreduce:tree" \
  --proto allreduce:Simple --json "$tmp/ntb.json"
python3 - "$tmp/ntb.json" "$tmp/nt.json" <<'PY' || fail "fabemu run --nccl-algo differs from bench collective --algo"
import json, sys
bench = json.load(open(sys.argv[1]))["rows"][0]
run = json.load(open(sys.argv[2]))["collectives"][0]
assert bench["algorithm"] == "tree" and bench["protocol"] == "Simple", bench
assert run["duration_ps"] == bench["time_ps"], (run["duration_ps"], bench["time_ps"])
PY
expect_status 2 "$FABEMU" run -w "$tmp/ar/ar" -f "$tmp/nccl.yaml" --nccl-algo "ring;tree"
expect_text "$tmp/err" "--nccl-algo: algorithm list: \"tree\" needs a collective"
expect_status 2 "$FABEMU" run -w "$tmp/ar/ar" -f "$tmp/nccl.yaml" --collective-semantics astra --nccl-proto LL
expect_text "$tmp/err" "--nccl-proto applies in NCCL's collective semantics only"

# JSON and CSV carry the same sizes; an unvalidated system says so in the title.
expect_status 0 "$FABEMU" bench collective all_gather_perf -s "$SYS/gb200_nvl72.yaml" -b 1M -e 1G -q \
  --json "$tmp/s.json" --csv "$tmp/s.csv"
[ ! -s "$tmp/out" ] || fail "-q printed the table"
[ "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(len(d['rows']), d['ranks'], d['collective'])" "$tmp/s.json")" = "11 72 all_gather" ] \
  || fail "JSON rows/ranks/collective"
[ "$(wc -l <"$tmp/s.csv")" -eq 12 ] || fail "CSV: header + 11 rows"
expect_status 0 "$FABEMU" bench collective -s "$SYS/gb200_nvl72.yaml" -b 8 -e 8
expect_text "$tmp/out" "UNVALIDATED system"

# --compare with nccl-tests' own stdout format (a 0:-prefixed p4de-like excerpt).
cat >"$tmp/real.txt" <<'TXT'
# nThread 1 nGpus 1 minBytes 8 maxBytes 2147483648 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
0:           8             2     float     sum      -1    164.3    0.00    0.00      0    163.3    0.00    0.00      0
0:     1048576        262144     float     sum      -1    309.4    3.39    6.35      0    307.3    3.41    6.40      0
TXT
expect_status 0 "$FABEMU" bench collective -q -s "$SYS/p4de_2node_efa.yaml" --compare "$tmp/real.txt"
expect_text "$tmp/out" "# compared with $tmp/real.txt"
expect_text "$tmp/out" "# busbw |error|, sizes >= 64 KiB (1)"
expect_text "$tmp/out" "# time |error|, sizes < 64 KiB (1)"

# Bad input: exit 2, named.
expect_status 2 "$FABEMU" bench collective -s "$SRC/traces/samples/fabric_2d.yaml"
expect_text "$tmp/err" "no \"nccl:\" section"
expect_status 2 "$FABEMU" bench collective alltoall -s "$SYS/a100_8x_nvswitch.yaml"
expect_text "$tmp/err" "unknown collective \"alltoall\""
expect_status 2 "$FABEMU" bench collective -s "$SYS/a100_8x_nvswitch.yaml" --algo ring,trie
expect_text "$tmp/err" "--algo: algorithm list: unknown element \"trie\""
expect_status 2 "$FABEMU" bench collective -s "$SYS/a100_8x_nvswitch.yaml" -b 1G -e 1M
expect_text "$tmp/err" "minimum size (-b) is above the maximum (-e)"
expect_status 2 "$FABEMU" bench collective -s "$SYS/a100_8x_nvswitch.yaml" -d float8
expect_text "$tmp/err" "unknown data type \"float8\""
printf '       8   2  float sum -1  abc 0.00 0.00 0 1.0 0.00 0.00 0\n' >"$tmp/bad.txt"
expect_status 2 "$FABEMU" bench collective -q -s "$SYS/a100_8x_nvswitch.yaml" --compare "$tmp/bad.txt"
expect_text "$tmp/err" "$tmp/bad.txt: line 1"
mkdir "$tmp/ro" && chmod 500 "$tmp/ro"
if [ "$(id -u)" != 0 ]; then
  expect_status 2 "$FABEMU" bench collective -s "$SYS/a100_8x_nvswitch.yaml" --json "$tmp/ro/x.json"
fi
expect_status 2 "$FABEMU" bench collective -s "$SYS/a100_8x_nvswitch.yaml" --json "$tmp/nodir/x.json"
expect_text "$tmp/err" "--json $tmp/nodir/x.json"
echo "cli.bench: OK"
