#!/usr/bin/env bash
# `fabemu trace analyze` and `fabemu trace graph` end to end: a generated workload with one rank's collective
# changed (through trace convert to JSON and back) is named first; shared traces balance; the HTML page in
# headless Chromium (skipped with a message when chromium is absent); graphviz parses the graph; bad input.
# Usage: test_trace_analyze.sh FABEMU SHARED_TRACES_DIR BUILD_DIR
set -euo pipefail
fabemu=$1
shared=$2
build=$3
source "$(dirname "$0")/cli_lib.sh"

# --- a generated workload, one collective of rank 3 made twice as large ---------------------------------------
expect_status 0 "$fabemu" trace generate llm --layers 2 --hidden 256 --ffn 1024 --heads 4 --vocab 1000 --seq 128 \
  --global-batch 8 --tp 2 --pp 2 --dp 2 -j 1 -q -o "$tmp/llm/llm"
expect_status 0 "$fabemu" trace analyze "$tmp/llm/llm"
expect_text "$tmp/out" "every member of every instance has the same comm_size: perfect balance (CV 0)"
expect_status 0 "$fabemu" trace convert "$tmp/llm/llm.3.et" "$tmp/r3.json"
# The second COMM_COLL_NODE of rank 3: its id, group and new size.
python3 - "$tmp/r3.json" "$tmp/r3b.json" "$tmp/changed" <<'PY'
import json, sys
src, dst, note = sys.argv[1:]
out, seen, done = [], 0, False
for i, line in enumerate(open(src)):
    rec = json.loads(line)
    if i > 0 and not done and rec.get("type") == "COMM_COLL_NODE":
        seen += 1
        if seen == 2:
            for a in rec["attr"]:
                if a["name"] == "comm_size":
                    key = next(k for k in a if k != "name")
                    size = int(a[key])
                    a[key] = str(size * 2) if isinstance(a[key], str) else size * 2
            pg = next((a.get("string_val", "") for a in rec["attr"] if a["name"] == "pg_name"), "")
            open(note, "w").write(f"{rec['id']} {size} {pg}\n")
            done = True
    out.append(json.dumps(rec))
open(dst, "w").write("\n".join(out) + "\n")
PY
read -r node_id size pg < "$tmp/changed"
expect_status 0 "$fabemu" trace convert "$tmp/r3b.json" "$tmp/llm/llm.3.et"
expect_status 0 "$fabemu" trace analyze "$tmp/llm/llm"
first=$(grep -A1 "^Worst imbalances first" "$tmp/out" | tail -1)
case "$first" in
  *"\"$pg\" #"*"rank 3 node $node_id: "*) ;;
  *) cat "$tmp/out" >&2; fail "the first imbalance is not rank 3's node $node_id in group $pg: $first" ;;
esac
expect_status 0 "$fabemu" trace analyze "$tmp/llm/llm" --json
python3 - "$tmp/out" "$node_id" "$size" "$pg" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1])); node, size, pg = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
worst = doc["imbalanced"][0]
assert doc["collectives"]["imbalanced"] == 1, doc["collectives"]
assert worst["pg_name"] == pg, worst
assert worst["deviating"] == [{"rank": 3, "node_id": node, "bytes": 2 * size}], worst["deviating"]
assert worst["typical_bytes"] == size and worst["max_bytes"] == 2 * size, worst
assert worst["cv"] > 0 and worst["max_over_mean"] > 1, worst
per = {m["rank"]: m["bytes"] for m in worst["bytes_per_rank"]}
assert per[3] == 2 * size and all(v == size for r, v in per.items() if r != 3), per
types = {t["type"]: t for t in doc["by_type"]}
assert sum(t["imbalanced"] for t in types.values()) == 1, types
assert doc["ranks"] == 8 and len(doc["per_rank"]) == 8
PY

# --- the collectives' matrix is what `fabemu run` sends: its totals are the run report's, message for message ----
src=$(cd "$(dirname "$0")/../.." && pwd)
expect_status 0 "$fabemu" trace generate llm --layers 2 --hidden 256 --ffn 1024 --heads 4 --vocab 1000 --seq 128 \
  --global-batch 8 --tp 2 --pp 2 --dp 2 -j 1 -q -o "$tmp/even/llm"
expect_status 0 "$fabemu" run -w "$tmp/even/llm" -f "$src/traces/samples/fabric_2d.yaml" -r "$tmp/run.json"
expect_status 0 "$fabemu" trace analyze "$tmp/even/llm" -f "$src/traces/samples/fabric_2d.yaml" --json
python3 - "$tmp/out" "$tmp/run.json" <<'PY'
import json, sys
a, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
coll = a["collective_traffic"]
p2p = a["p2p"]
want = (r["totals"]["messages"], r["totals"]["message_bytes"])
got = (coll["messages"] + p2p["messages"], coll["bytes"] + p2p["bytes"])
assert got == want and coll["messages"] > 0, f"analyze {got} != run {want}"
print(f"collective + SEND traffic = the run's: {want[0]} messages, {want[1]} bytes")
PY

# --- the HTML page ------------------------------------------------------------------------------------------
expect_status 0 "$fabemu" trace analyze "$tmp/llm/llm" --html "$tmp/page.html"
expect_text "$tmp/out" "wrote $tmp/page.html"
if grep -Eq 'https?://|<script|src=' "$tmp/page.html"; then fail "the page refers to something outside itself"; fi
[ "$(grep -o '<svg class="chart"' "$tmp/page.html" | wc -l)" -ge 5 ] || fail "fewer than 5 charts"
if command -v chromium >/dev/null; then
  browser_dom "$tmp/page.html" "$tmp/dom.html"
  python3 - "$tmp/dom.html" <<'PY'
import re, sys
dom = open(sys.argv[1]).read()
charts = re.findall(r'<svg class="chart"[^>]*data-points="(\d+)"[^>]*>(.*?)</svg>', dom, re.S)
assert len(charts) >= 5, f"{len(charts)} charts in the DOM"
for want, body in charts:
    got = body.count('class="point"')
    assert int(want) > 0 and got == int(want), f"a chart declares {want} points and draws {got}"
assert "rank 3 node" in dom, "the imbalance table does not name rank 3"
print(f"chromium: {len(charts)} charts, {sum(int(w) for w, _ in charts)} points")
PY
  browser_screenshot "$tmp/page.html" "$build/trace_analyze_llm.png" 2400
else
  echo "chromium absent (Debian package chromium; host/tools/install-deps.sh installs it): HTML browser checks skipped"
fi

# --- trace graph ----------------------------------------------------------------------------------------------
expect_status 0 "$fabemu" trace generate collective --type all_reduce -n 4 --size 1MB --count 3 -o "$tmp/ar/ar"
expect_status 0 "$fabemu" trace graph "$tmp/ar/ar" --rank 1 -o "$tmp/g.dot"
expect_text "$tmp/out" "3 nodes and 2 edges of 3 nodes (3 on the longest chain)"
if command -v dot >/dev/null; then
  dot -Tsvg "$tmp/g.dot" -o "$tmp/g_check.svg" || fail "graphviz does not parse the DOT"
  expect_status 0 "$fabemu" trace graph "$tmp/ar/ar" --rank 1 -o "$tmp/g.svg"
  [ "$(grep -c 'class="node"' "$tmp/g.svg")" -eq 3 ] || fail "the SVG does not have 3 nodes"
  [ "$(grep -c 'class="edge"' "$tmp/g.svg")" -eq 2 ] || fail "the SVG does not have 2 edges"
else
  echo "graphviz absent: SVG checks skipped"
fi
expect_status 2 env PATH=/nonexistent "$fabemu" trace graph "$tmp/ar/ar" --rank 1 -o "$tmp/nodot.svg"
expect_text "$tmp/err" "$tmp/nodot.svg: an SVG needs graphviz's \`dot\`, which is not installed"
[ ! -e "$tmp/nodot.svg" ] && [ -z "$(ls -A "$tmp" | grep -E "fabemu-tmp|dot.tmp")" ] || fail "a failed SVG left files behind"
expect_status 0 "$fabemu" trace graph "$tmp/llm/llm" --rank 0 --around 1 --depth 1
grep -q '^digraph "rank 0"' "$tmp/out" || fail "no DOT on stdout"
expect_status 2 "$fabemu" trace graph "$tmp/llm/llm" --rank 0 --max-nodes 5
expect_text "$tmp/err" "more than the limit of 5"
expect_text "$tmp/err" "--nodes A..B"

# --- bad input: a clear, located error and exit status 2 ------------------------------------------------------
expect_status 2 "$fabemu" trace graph "$tmp/ar/ar" --rank 9
expect_text "$tmp/err" "--rank 9: workload $tmp/ar/ar has ranks 0..3"
expect_status 2 "$fabemu" trace graph "$tmp/ar/ar" --rank 0 --nodes 9..3
expect_text "$tmp/err" "the range is empty"
expect_status 2 "$fabemu" trace graph "$tmp/ar/ar" --rank 0 --around 12345
expect_text "$tmp/err" "$tmp/ar/ar.0.et: rank 0 has no node id 12345"
printf 'not a trace' > "$tmp/bad.0.et"
expect_status 2 "$fabemu" trace analyze "$tmp/bad"
expect_text "$tmp/err" "$tmp/bad.0.et"
expect_status 2 "$fabemu" trace analyze "$tmp/nothing_here"
expect_text "$tmp/err" "nothing_here"

# --- shared traces: microbenchmarks and ResNet-50 balance, chakra.0.et runs -----------------------------------
if [ -d "$shared" ]; then
  for p in "$shared"/astra-sim/examples/workload/microbenchmarks/*/*/; do
    expect_status 0 "$fabemu" trace analyze "$p"
    expect_text "$tmp/out" "perfect balance (CV 0)"
  done
  expect_status 0 "$fabemu" trace analyze "$shared/astra-sim-text/resnet50_dp_N64/resnet50" --json
  python3 -c "
import json, sys
d = json.load(open('$tmp/out'))
assert d['collectives']['imbalanced'] == 0 and d['collectives']['instances'] > 0, d['collectives']
assert all(i['cv'] == 0 for i in d['instances'])
assert d['spread']['collective_bytes']['cv'] == 0
"
  expect_status 0 "$fabemu" trace analyze "$shared/mlcommons-chakra/chakra.0.et"
  expect_text "$tmp/out" "Longest dependency chain"
else
  echo "shared traces absent: shared-trace analyze checks skipped"
fi
echo "trace analyze / graph: all checks passed"
