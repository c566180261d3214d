#!/usr/bin/env bash
# Synthesizes the scheduler kernel with yosys for Xilinx UltraScale+ (synth_xilinx -family xcup) at
# each link-table size given (default: 256 and 4096 links) and prints LUT / SRL (LUTs used as shift
# registers) / FF / BRAM / DSP / carry-chain counts.
# Usage: hw/synth.sh [links...]   (links a power of two, 2..65536). Logs in ${SYNTH_DIR:-/tmp/fabemu-synth}.
# Out-of-context, no timing: a resource estimate, not a Vivado implementation.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rtl=$here/sched/rtl
out=${SYNTH_DIR:-/tmp/fabemu-synth}
mkdir -p "$out"
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(256 4096)
srcs="$rtl/fabemu_sched_pkg.sv $rtl/sched_skid.sv $rtl/sched_axi_check.sv $rtl/sched_sdp_ram.sv $rtl/sched_hop_core.sv $rtl/sched_axi_rd.sv $rtl/sched_axi_wr.sv $rtl/sched_axil_ctrl.sv $rtl/sched_kernel.sv"

printf '%-7s %8s %8s %8s %8s %8s %8s %8s\n' links LUT SRL FF RAMB36 RAMB18 DSP CARRY
for links in "${sizes[@]}"; do
  w=0; n=1
  while [ $n -lt "$links" ]; do n=$((n * 2)); w=$((w + 1)); done
  if [ $n -ne "$links" ] || [ $w -lt 1 ] || [ $w -gt 16 ]; then echo "synth.sh: $links is not a power of two in 2..65536" >&2; exit 2; fi
  log=$out/sched_kernel_$links.log
  if ! yosys -q -l "$log" -p "read_verilog -sv $srcs; chparam -set LINK_ADDR_W $w sched_kernel; synth_xilinx -family xcup -top sched_kernel -flatten -noiopad; stat" >/dev/null 2>&1; then
    echo "synth.sh: yosys failed for $links links; see $log" >&2
    tail -5 "$log" >&2
    exit 1
  fi
  # The last 'stat' of the log: cell counts by type.
  count() { awk -v pat="$1" '/Number of cells/{delete c} $1 ~ pat && NF==2 {c[$1]=$2} END{s=0; for (k in c) s+=c[k]; print s}' "$log"; }
  printf '%-7s %8s %8s %8s %8s %8s %8s %8s\n' "$links" "$(count '^LUT[1-6]$')" "$(count '^SRL(16E|C32E)$')" \
    "$(count '^FD[CPRS]E?$')" "$(count '^RAMB36E2$')" "$(count '^RAMB18E2$')" "$(count '^DSP48E2$')" "$(count '^CARRY[48]$')"
done

# The frame generator stage (sched_frame_gen.sv, not part of the kernel): FRAME_GEN=1 hw/synth.sh [links...]
# adds its row after the kernel's (it has no link table, so one synthesis).
if [ "${FRAME_GEN:-0}" = 1 ]; then
  log=$out/sched_frame_gen.log
  if ! yosys -q -l "$log" -p "read_verilog -sv $rtl/sched_frame_gen.sv; synth_xilinx -family xcup -top sched_frame_gen -flatten -noiopad; stat" >/dev/null 2>&1; then
    echo "synth.sh: yosys failed for sched_frame_gen; see $log" >&2
    tail -5 "$log" >&2
    exit 1
  fi
  printf '%-7s %8s %8s %8s %8s %8s %8s %8s\n' framegen "$(count '^LUT[1-6]$')" "$(count '^SRL(16E|C32E)$')" \
    "$(count '^FD[CPRS]E?$')" "$(count '^RAMB36E2$')" "$(count '^RAMB18E2$')" "$(count '^DSP48E2$')" "$(count '^CARRY[48]$')"
fi
