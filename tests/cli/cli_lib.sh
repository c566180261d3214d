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
