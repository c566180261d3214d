#!/usr/bin/env bash
# `fabemu run --html` end to end: the bundled sample's page in headless Chromium (no console errors, no
# request, every chart drawn with as many marks as it declares; a screenshot for a person to look at);
# the JSON report the same with and without --html; the analytical model's page; the DPDK fabric's measured
# vs modelled section; an unwritable page refused before the run. Chromium absent: the browser checks skip.
# Usage: test_run_page.sh FABEMU SOURCE_DIR BUILD_DIR
set -euo pipefail
fabemu=$1
src=$2
build=$3
source "$(dirname "$0")/cli_lib.sh"

# The page's charts in a DOM (or the file): their count, and each declares as many marks as it draws.
check_charts() {  # check_charts FILE MIN_CHARTS
  python3 - "$1" "$2" <<'PY'
import re, sys
dom, least = open(sys.argv[1]).read(), int(sys.argv[2])
charts = re.findall(r'<svg class="chart"[^>]*data-points="(\d+)"[^>]*aria-label="([^"]*)">(.*?)</svg>', dom, re.S)
assert len(charts) >= least, f"{len(charts)} charts, expected at least {least}"
for want, title, body in charts:
    got = body.count('class="point"')
    assert int(want) > 0 and got == int(want), f"chart '{title}' declares {want} points and draws {got}"
print(f"{len(charts)} charts, {sum(int(w) for w, _, _ in charts)} points")
PY
}

# --- the bundled sample ---------------------------------------------------------------------------------------
expect_status 0 "$fabemu" trace convert --from astra-text --ranks 8 "$src/traces/samples/mlp8_data_parallel.txt" "$tmp/mlp"
sample=(run -w "$tmp/mlp" -f "$src/traces/samples/fabric_2d.yaml")
expect_status 0 "$fabemu" "${sample[@]}" -q -r "$tmp/plain.json"
expect_status 0 "$fabemu" "${sample[@]}" -q -r "$tmp/with_page.json" --html "$tmp/sample.html"
cmp "$tmp/plain.json" "$tmp/with_page.json" || fail "--html changed the JSON report"
if grep -Eq 'https?://|<script|src=' "$tmp/sample.html"; then fail "the page refers to something outside itself"; fi
check_charts "$tmp/sample.html" 8 >/dev/null
for heading in Ranks Collectives Links "Traffic matrix"; do expect_text "$tmp/sample.html" "<h2>$heading</h2>"; done
expect_text "$tmp/sample.html" "Link utilization over time: the 24 busiest links"
expect_text "$tmp/sample.html" "Bytes delivered from each sender to each receiver"
# Every rank sends 119 MiB in the sample (8 ring all-reduces of 4-16 MiB over 2 dimensions).
expect_text "$tmp/sample.html" "<title>rank 0 sent: 119 MiB</title>"
if command -v chromium >/dev/null; then
  browser_dom "$tmp/sample.html" "$tmp/dom.html"
  echo "chromium: $(check_charts "$tmp/dom.html" 8)"
  browser_screenshot "$tmp/sample.html" "$build/run_page_sample.png" 4000
else
  echo "chromium absent (Debian package chromium; host/tools/install-deps.sh installs it): HTML browser checks skipped"
fi

# --- the analytical model: no links, said so -----------------------------------------------------------------
expect_status 0 "$fabemu" "${sample[@]}" -m analytical -q --html "$tmp/analytical.html"
expect_text "$tmp/analytical.html" "The analytical model keeps no per-link state: run with --model packet for link utilization."
check_charts "$tmp/analytical.html" 6 >/dev/null

# --- the DPDK fabric: measured vs modelled per collective ----------------------------------------------------
if built_with_dpdk "$fabemu"; then
  expect_status 0 "$fabemu" "${sample[@]}" --mtu 65536 --fabric dpdk --dilation 2000 -q --html "$tmp/dpdk.html" -r "$tmp/dpdk.json"
  expect_text "$tmp/dpdk.html" "<h2>Measured vs modelled</h2>"
  expect_text "$tmp/dpdk.html" "From the report&#39;s &quot;dpdk&quot; section"
  # One bar per collective the report measured.
  python3 - "$tmp/dpdk.json" "$tmp/dpdk.html" <<'PY'
import json, re, sys
measured = json.load(open(sys.argv[1]))["dpdk"]["collectives"]
page = open(sys.argv[2]).read()
m = re.search(r'<svg class="chart"[^>]*data-points="(\d+)"[^>]*aria-label="Measured / modelled', page)
assert m and int(m.group(1)) == len(measured) == 8, (m and m.group(1), len(measured))
PY
else
  echo "built without DPDK: the measured-vs-modelled page is not checked"
fi

# --- the socket fabric: measured vs modelled too, the modelled spans equal to the DPDK fabric's ---------------
expect_status 0 "$fabemu" trace generate collective --type all_reduce -n 4 --size 1MB --count 3 -o "$tmp/ar/ar"
printf 'topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' > "$tmp/ring4.yml"
ring=(run -w "$tmp/ar/ar" -n "$tmp/ring4.yml" --dilation 1000 -q)
expect_status 0 "$fabemu" "${ring[@]}" --fabric socket --html "$tmp/socket.html" -r "$tmp/socket.json"
expect_text "$tmp/socket.html" "From the report&#39;s &quot;socket&quot; section"
others=()
if built_with_dpdk "$fabemu"; then
  expect_status 0 "$fabemu" "${ring[@]}" --fabric dpdk -r "$tmp/dpdk_ring.json"
  others=("$tmp/dpdk_ring.json")
fi
python3 - "$tmp/socket.json" "${others[@]}" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
spans = r["socket"]["collectives"]
assert [c["index"] for c in spans] == [0, 1, 2], spans
for c in spans:
    coll = r["collectives"][c["index"]]
    assert c["messages"] == coll["messages"] and c["bytes"] == coll["message_bytes"], (c, coll)
    assert c["modelled_ps"] > 0 and c["measured_ps"] > 0, c
    assert abs(c["deviation"] - (c["measured_ps"] / c["modelled_ps"] - 1)) < 1e-6, c
for other in sys.argv[2:]:
    d = json.load(open(other))["dpdk"]["collectives"]
    assert [c["modelled_ps"] for c in d] == [c["modelled_ps"] for c in spans], (d, spans)
print("socket: modelled spans", [c["modelled_ps"] for c in spans], "equal on DPDK" if sys.argv[2:] else "")
PY

# --- bad input: a page that cannot be written is refused before the run --------------------------------------
expect_status 2 "$fabemu" "${sample[@]}" -q --html "$tmp/no/such/dir/page.html"
expect_text "$tmp/err" "--html $tmp/no/such/dir/page.html"
echo "run page: ok"
