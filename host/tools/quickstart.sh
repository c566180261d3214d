#!/usr/bin/env bash
# Quick start: installs what is missing, builds fabemu, and runs it on a sample workload it generates
# (an 8-rank all-reduce microbenchmark, the layout ASTRA-sim uses): `trace info` and `trace validate`.
set -euo pipefail
cd "$(dirname "$0")/../.."

host/tools/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target fabemu

sample=build/samples
rm -rf "$sample"
echo
echo "== fabemu trace generate collective --type all_reduce --ranks 8 --size 1MiB --out-dir $sample"
build/host/fabemu trace generate collective --type all_reduce --ranks 8 --size 1MiB --out-dir "$sample"
prefix="$sample/all_reduce/8npus_1MB/all_reduce"
echo
echo "== fabemu trace info $prefix"
build/host/fabemu trace info "$prefix"
echo
echo "== fabemu trace validate $prefix"
build/host/fabemu trace validate "$prefix"
