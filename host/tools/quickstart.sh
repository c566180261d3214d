#!/usr/bin/env bash
# Quick start: installs what is missing, builds fabemu, and emulates a bundled sample: an 8-rank
# data-parallel MLP training step (traces/samples/mlp8_data_parallel.txt, ASTRA-sim 1.0 text format,
# converted to Chakra traces) on a two-level target fabric (traces/samples/fabric_2d.yaml).
set -euo pipefail
cd "$(dirname "$0")/../.."

host/tools/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target fabemu

sample=build/samples
rm -rf "$sample"
mkdir -p "$sample"
echo
echo "== fabemu trace convert --from astra-text --ranks 8 traces/samples/mlp8_data_parallel.txt $sample/mlp"
build/host/fabemu trace convert --from astra-text --ranks 8 traces/samples/mlp8_data_parallel.txt "$sample/mlp"
echo
echo "== fabemu run --workload $sample/mlp --fabric-config traces/samples/fabric_2d.yaml --report $sample/report.json --timeline $sample/timeline.json --html $sample/report.html"
build/host/fabemu run --workload "$sample/mlp" --fabric-config traces/samples/fabric_2d.yaml \
  --report "$sample/report.json" --timeline "$sample/timeline.json" --html "$sample/report.html"
echo
echo "Page: $sample/report.html (open it in a browser: charts of ranks, collectives, links and traffic)."
echo "Report: $sample/report.json (schema: docs/report.md)."
echo "Timeline: $sample/timeline.json (open it in https://ui.perfetto.dev or chrome://tracing)."
