#!/usr/bin/env bash
# Transmit rate of the DPDK fabric's tx loop (fabemu_bench_dpdk_tx) against dpdk-testpmd's txonly engine
# on the same device, in the same run, interleaved: for each round and each frame size, testpmd txonly
# on net_null for SECONDS (its Tx-pps samples, the first two dropped as start-up, median), then every
# case of ours at that size. Prints a markdown table with the medians over the rounds and the ratios:
#   vs testpmd  = ours / testpmd txonly on net_null, per round, median (the issue's target: >= 0.70);
#   vs ref      = ours / txonly_ref on the same device, per round, median. txonly_ref is testpmd's txonly
#                 engine rebuilt in the benchmark (bench_dpdk_tx.cpp); on the ring pair it is the
#                 yardstick, because testpmd cannot run txonly on a ring pair: nothing would drain the
#                 far end, the ring fills and testpmd counts only drops. Its ratio to testpmd on net_null
#                 shows how faithful it is.
# testpmd runs with -l 0-1 (main lcore 0 only prints statistics; it forwards on lcore 1); ours runs on
# lcore 1 as well (FABEMU_BENCH_LCORE).
#
# usage: bench/run_dpdk_tx.sh [BUILD_DIR] [ROUNDS] [SECONDS] [FILTER]
#   BUILD_DIR defaults to build; ROUNDS to 3; SECONDS (per testpmd run and per case) to 2;
#   FILTER (a regex on our case names) to all cases.
set -euo pipefail

build=${1:-build}
rounds=${2:-3}
secs=${3:-2}
filter=${4:-.}
bench="$build/bench/fabemu_bench_dpdk_tx"
lcore=1
[[ -x "$bench" ]] || { echo "run_dpdk_tx.sh: $bench not built (cmake --build $build --target fabemu_bench_dpdk_tx)" >&2; exit 1; }
command -v dpdk-testpmd > /dev/null || { echo "run_dpdk_tx.sh: dpdk-testpmd not installed" >&2; exit 1; }

out=$(mktemp -d /tmp/fabemu-dpdk-tx-XXXXXX)
trap 'rm -rf "$out"' EXIT
sizes=(102 1126 118 1142)  # fabemu mode payload 0 and 1024 B, RoCEv2 mode payload 0 and 1024 B

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; r++)); do
  for size in "${sizes[@]}"; do
    log="$out/testpmd_${r}_${size}.log"
    timeout -s INT $((secs + 4)) dpdk-testpmd --no-huge -m 512 --no-pci --no-shconf \
      --file-prefix "fabemu-tp-$$-$r-$size" --no-telemetry -l 0-$lcore --vdev net_null0 -- \
      --forward-mode=txonly --stats-period 1 --total-num-mbufs=16384 --txpkts="$size" > "$log" 2>&1 || true
    FABEMU_BENCH_LCORE=$lcore "$bench" --benchmark_filter="/${size}B" --benchmark_min_time="$secs" \
      --benchmark_format=json --benchmark_out="$out/ours_${r}_${size}.json" --benchmark_out_format=json \
      > /dev/null 2> "$out/ours_${r}_${size}.err" || { cat "$out/ours_${r}_${size}.err" >&2; exit 1; }
    echo "# round $r, ${size} B done (load $(cut -d' ' -f1 /proc/loadavg))" >&2
  done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$out" "$rounds" "$filter" << 'EOF'
import json, re, statistics, sys, pathlib
out, rounds, flt = pathlib.Path(sys.argv[1]), int(sys.argv[2]), re.compile(sys.argv[3])
sizes = [102, 1126, 118, 1142]

def testpmd_pps(log):
    pps = [int(m.group(1)) for m in re.finditer(r"Tx-pps:\s+(\d+)", log.read_text(errors="replace"))]
    pps = pps[2:]  # start-up
    return statistics.median(pps) if pps else float("nan")

tp = {}    # (round, size) -> pps
ours = {}  # (round, name) -> pps
for r in range(1, rounds + 1):
    for s in sizes:
        tp[(r, s)] = testpmd_pps(out / f"testpmd_{r}_{s}.log")
        for b in json.loads((out / f"ours_{r}_{s}.json").read_text())["benchmarks"]:
            if b.get("error_occurred"):
                print(f"# {b['name']}: {b.get('error_message')}", file=sys.stderr)
                continue
            ours[(r, b["name"].removesuffix("/real_time"))] = b["items_per_second"]

def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")

names = sorted({n for (_, n) in ours}, key=lambda n: (n.split("/")[1], int(n.split("/")[2][:-1]), n))
print()
print("| case | frame | Mpps (median of %d) | vs testpmd txonly (net_null) | vs txonly_ref (same device) |" % rounds)
print("|---|---|---|---|---|")
for s in sizes:
    print(f"| testpmd txonly, net_null | {s} B | {med([tp[(r, s)] for r in range(1, rounds + 1)]) / 1e6:.2f} | 1 | |")
for n in names:
    if not flt.search(n):
        continue
    dev, size = n.split("/")[1], int(n.split("/")[2][:-1])
    ref = f"txonly_ref/{dev}/{size}B"
    rs = range(1, rounds + 1)
    mpps = med([ours.get((r, n), float("nan")) for r in rs]) / 1e6
    vs_tp = med([ours.get((r, n), float("nan")) / tp[(r, size)] for r in rs])
    vs_ref = med([ours.get((r, n), float("nan")) / ours.get((r, ref), float("nan")) for r in rs])
    print(f"| {n} | {size} B | {mpps:.2f} | {vs_tp:.2f} | {vs_ref:.2f} |")
EOF
