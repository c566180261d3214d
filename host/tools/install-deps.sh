#!/usr/bin/env bash
# Installs every Debian package fabemu builds against or runs with (all backends), if missing.
# Idempotent and silent when everything is present. Debian 12 (bookworm); needs root or sudo.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config git
  # core libraries
  libprotobuf-dev protobuf-compiler zlib1g-dev libspdlog-dev libfmt-dev libcli11-dev
  nlohmann-json3-dev libyaml-cpp-dev libboost-dev libssl-dev
  # MSCCL-IR XML import of custom collectives (traces/msccl_xml.cpp)
  libtinyxml2-dev
  # tests and benchmarks
  googletest libgtest-dev libgmock-dev libbenchmark-dev python3
  # `fabemu trace graph -o FILE.svg` runs graphviz's dot; the trace analyze test opens its HTML page in headless chromium
  graphviz chromium
  # fuzzing (tests/fuzz, bench/run_fuzz.sh, CI's smoke step): clang 14 and its libFuzzer runtime
  clang-14 libclang-rt-14-dev
  # DPDK backend (and its tools: dpdk-testpmd) and packet captures
  libdpdk-dev dpdk-dev libpcap-dev iproute2 tcpdump
  # FPGA backend: Xilinx XRT host library, Verilator hw-emu, Yosys resource reports
  libxrt-dev uuid-dev verilator yosys
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "install-deps: installing ${#missing[@]} missing package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
echo "install-deps: done"
