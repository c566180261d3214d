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
