# Sourced by bench/run_scaling.sh and bench/run_packet_speed.sh: their shared set-up for ResNet-50 runs on
# ASTRA-sim text traces. astra_text_setup NAME checks the tools and the shared inputs (messages start with
# NAME), sets $traces and $system, raises the descriptor limit (the walker keeps every rank's trace open:
# 16,384 ranks need more than the usual 1024), makes $tmp (removed on exit) and defines ring_yml.
astra_text_setup() {
  local name=$1
  [[ -x /usr/bin/time ]] || { echo "$name: /usr/bin/time (GNU time) is needed" >&2; exit 2; }
  command -v python3 >/dev/null || { echo "$name: python3 is needed to read the JSON reports" >&2; exit 2; }
  traces=$shared/traces/astra-sim-text
  system=$shared/configs/astra-sim/system_ring_4chunks.json
  [[ -f $system && -d $traces ]] || { echo "$name: $shared lacks traces/astra-sim-text or $system" >&2; exit 2; }
  ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/fabemu_${name%.sh}.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  trap 'exit 130' INT TERM
}

ring_yml() {  # ring_yml N -> path of a Ring_<N>npus.yml (50 GB/s, 500 ns)
  local f=$tmp/Ring_$1npus.yml
  printf 'topology: [ Ring ]\nnpus_count: [ %s ]\nbandwidth: [ 50.0 ]  # GB/s\nlatency: [ 500.0 ]  # ns\n' "$1" >"$f"
  echo "$f"
}
