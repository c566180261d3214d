#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, -DFABEMU_FUZZ=ON, in build-fuzz/) and runs each for SECONDS_PER_TARGET
# seconds (default 600) on its corpus, then prints target | runs | execs/s | crashes | peak RSS. See
# bench/README.md, "Fuzzing", and tests/fuzz/README.md.
#   bench/run_fuzz.sh [SECONDS_PER_TARGET]
# Environment:
#   JOBS=N          targets run at once (default 1; each is one process on one core)
#   TARGETS="a b"   only these targets (default: every one, fuzz_*)
#   BUILD_DIR=DIR   the fuzz build (default build-fuzz next to this script's source tree)
#   NICE=N          nice level of the fuzzers (default 10)
#   CLANG, CLANGXX  the compilers of a new build dir (default clang-14, clang++-14: Debian 12's clang-14 package)
#   FABEMU_SHARED_DIR  the shared traces and configs for the seeds (default ../shared next to the source tree)
# Files (under BUILD_DIR/fuzz/): seeds/<target>/ (made anew each run by fabemu_fuzz_seeds), corpus/<target>/
# (what libFuzzer added; kept across runs), findings/<target>/ (crash-*, leak-*, timeout-*, oom-*: the
# reproducers), logs/<target>.log. Exit status: 0 when no target crashed, 1 otherwise, 2 when the build fails.
set -euo pipefail
SECONDS_PER_TARGET=${1:-600}
src=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$src/build-fuzz}
jobs=${JOBS:-1}
nice_level=${NICE:-10}

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_C_COMPILER="${CLANG:-clang-14}" -DCMAKE_CXX_COMPILER="${CLANGXX:-clang++-14}" -DFABEMU_FUZZ=ON \
    -DFABEMU_BUILD_TESTS=OFF -DFABEMU_BUILD_BENCH=OFF -DFABEMU_WITH_DPDK=OFF -DFABEMU_WITH_XRT=OFF \
    -DFABEMU_WITH_VERILATOR=OFF >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 2; }
fi
cmake --build "$build" --target fabemu_fuzz || exit 2

out=$build/fuzz
targets=${TARGETS:-$(cd "$build/tests/fuzz" && ls fuzz_* | sort)}
"$build/tests/fuzz/fabemu_fuzz_seeds" "$out/seeds" "$src" ${FABEMU_SHARED_DIR:+"$FABEMU_SHARED_DIR"} >/dev/null
mkdir -p "$out/logs"

# Per target: the largest input (-max_len) and the time one input may take (-timeout, s).
max_len() {
  case $1 in
    fuzz_trace_*|fuzz_json_lines|fuzz_lab_framing|fuzz_lab_handshake|fuzz_msccl_xml) echo 65536 ;;
    fuzz_wire) echo 9100 ;;
    *) echo 16384 ;;
  esac
}
timeout_of() { case $1 in fuzz_lab_handshake) echo 60 ;; *) echo 10 ;; esac; }  # handshake: its client waits 30 s

run_one() {
  local t=$1
  mkdir -p "$out/corpus/$t" "$out/findings/$t" "$out/seeds/$t"
  nice -n "$nice_level" "$build/tests/fuzz/$t" -max_total_time="$SECONDS_PER_TARGET" -max_len="$(max_len "$t")" \
    -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout="$(timeout_of "$t")" -print_final_stats=1 \
    -artifact_prefix="$out/findings/$t/" "$out/corpus/$t" "$out/seeds/$t" >"$out/logs/$t.log" 2>&1 || true
}

running=0
for t in $targets; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

crashed=0
printf '| target | seconds | runs | execs/s | crashes | peak RSS (MiB) | corpus |\n|---|---|---|---|---|---|---|\n'
for t in $targets; do
  log=$out/logs/$t.log
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  # A run that crashed prints no final stats: its last status line ("#N ... exec/s: E rss: RMb") instead.
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  [ -n "$runs" ] || runs=$(sed -nE 's/^#([0-9]+).*/\1/p' <<<"$last")
  [ -n "$eps" ] || eps=$(sed -nE 's/.*exec\/s: ([0-9]+).*/\1/p' <<<"$last")
  [ -n "$rss" ] || rss=$(sed -nE 's/.*rss: ([0-9]+)Mb.*/\1/p' <<<"$last")
  crashes=$(find "$out/findings/$t" -type f -newer "$out/seeds/$t" | wc -l)
  [ "$crashes" -eq 0 ] || crashed=1
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$t" "$SECONDS_PER_TARGET" "${runs:-?}" "${eps:-?}" "$crashes" \
    "${rss:-?}" "$(find "$out/corpus/$t" -type f | wc -l)"
done
if [ "$crashed" -ne 0 ]; then
  echo "run_fuzz: crashes: reproducers in $out/findings/<target>/, logs in $out/logs/" >&2
  for t in $targets; do
    if [ -n "$(find "$out/findings/$t" -type f -newer "$out/seeds/$t")" ]; then
      echo "--- $t: $(find "$out/findings/$t" -type f -newer "$out/seeds/$t" | head -3 | tr '\n' ' ')" >&2
      grep -E 'ERROR|FINDING|SUMMARY|deadly signal' "$out/logs/$t.log" | head -5 >&2 || true
    fi
  done
  exit 1
fi
