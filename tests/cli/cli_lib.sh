# Shared by the command-line test scripts (sourced): a scratch folder and the checks they make.
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_status() {  # expect_status N command...: stdout in $tmp/out, stderr in $tmp/err
  local want=$1; shift
  set +e; "$@" >"$tmp/out" 2>"$tmp/err"; local got=$?; set -e
  [ "$got" -eq "$want" ] || { cat "$tmp/out" "$tmp/err" >&2; fail "'$*' exited $got, expected $want"; }
}
expect_text() {  # expect_text FILE TEXT
  grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "missing '$2' in $1"; }
}
# Headless Chromium (Debian's chromium), no network: browser_dom PAGE DOM writes the page's DOM after load
# and fails on console errors or network requests; browser_screenshot PAGE PNG HEIGHT writes a screenshot.
chrome=(chromium --headless --no-sandbox --disable-gpu --host-resolver-rules="MAP * ~NOTFOUND"
        --enable-logging=stderr --v=0 --user-data-dir="$tmp/chrome")
browser_dom() {
  "${chrome[@]}" --dump-dom "file://$1" >"$2" 2>"$tmp/chrome.log" || { cat "$tmp/chrome.log" >&2; fail "chromium failed"; }
  if grep -E 'CONSOLE|Uncaught|ERR_NAME_NOT_RESOLVED|net::ERR' "$tmp/chrome.log"; then fail "console errors or network requests"; fi
}
browser_screenshot() {
  "${chrome[@]}" --hide-scrollbars --window-size="1200,$3" --screenshot="$2" "file://$1" >/dev/null 2>"$tmp/chrome.log" \
    || { cat "$tmp/chrome.log" >&2; fail "chromium screenshot failed"; }
  [ -s "$2" ] || fail "no screenshot $2"
  echo "screenshot: $2"
}
# Whether FABEMU was built with DPDK (its `run --help` has --dpdk-port). Not `... | grep -q`: under pipefail,
# grep quitting at the first match can kill the writer with SIGPIPE and fail the pipeline at random.
built_with_dpdk() {
  "$1" run --help >"$tmp/run_help.txt"
  grep -q -- "--dpdk-port" "$tmp/run_help.txt"
}
# ring4_all_reduce: what the run checks of test_cli.sh and test_cli_realtime.sh replay: $ar, a 1 MiB all-reduce on
# 4 ranks (its file prefix), $tmp/ring4.yml, ASTRA-sim's network of a ring of 4 (50 GB/s, 500 ns), and
# $tmp/sys.json, its system file (ring algorithms, 4 chunks).
ring4_all_reduce() {
  expect_status 0 "$fabemu" trace generate collective --type all_reduce --ranks 4 --size 1MiB --out-dir "$tmp/ar"
  ar="$tmp/ar/all_reduce/4npus_1MB/all_reduce"
  printf 'topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' > "$tmp/ring4.yml"
  cat > "$tmp/sys.json" <<'EOF2'
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1, "preferred-dataset-splits": 4,
 "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"], "reduce-scatter-implementation": ["ring"],
 "all-to-all-implementation": ["ring"], "collective-optimization": "localBWAware", "local-mem-bw": 1600}
EOF2
}
