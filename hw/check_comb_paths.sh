#!/usr/bin/env bash
# Proves with yosys that no input port of the scheduler kernel, nor of any of its modules, reaches an
# output port through combinational logic only (every ready, valid and data output is a function of
# registers), so no AXI input reaches an AXI output combinationally and modules can be placed apart.
# Each design is elaborated and flattened (proc; flatten), then for its input ports the output cone
# through combinational cells only (select %coe*: registers and RAM ports stop it) is intersected with
# its output ports. Prints each offending output with the inputs that reach it.
# Usage: hw/check_comb_paths.sh [rtl dir]. Exit 0: no path; 1: paths found; 77: yosys is not installed
# (ctest reports the test as skipped). Logs in ${COMB_DIR:-/tmp/fabemu-comb}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rtl=${1:-$here/sched/rtl}
out=${COMB_DIR:-/tmp/fabemu-comb}
if ! command -v yosys >/dev/null 2>&1; then
  echo "check_comb_paths.sh: SKIPPED: yosys is not installed (apt-get install yosys) so the combinational-path check cannot run"
  exit 77
fi
mkdir -p "$out"
srcs="$rtl/fabemu_sched_pkg.sv $rtl/sched_skid.sv $rtl/sched_axi_check.sv $rtl/sched_sdp_ram.sv $rtl/sched_hop_core.sv $rtl/sched_axi_rd.sv $rtl/sched_axi_wr.sv $rtl/sched_axil_ctrl.sv $rtl/sched_kernel.sv"
fg_srcs="$rtl/sched_axi_check.sv $rtl/sched_delay.sv $rtl/sched_crc_lin.sv $rtl/sched_crc_mulmod.sv $rtl/sched_crc_xpow8.sv $rtl/sched_csum_tree.sv $rtl/sched_csum_fold.sv $rtl/sched_fg_layout.sv $rtl/sched_fg_build.sv $rtl/sched_async_fifo.sv $rtl/sched_fg_tx.sv $rtl/sched_fg.sv"
rx_srcs="$rtl/sched_axi_check.sv $rtl/sched_delay.sv $rtl/sched_sdp_ram.sv $rtl/sched_crc_lin.sv $rtl/sched_csum_tree.sv $rtl/sched_csum_fold.sv $rtl/sched_async_fifo.sv $rtl/sched_rx_rmw.sv $rtl/sched_rx_usum.sv $rtl/sched_rx_capture.sv $rtl/sched_rx_parse.sv $rtl/sched_rx_mulq.sv $rtl/sched_rx_bucket.sv $rtl/sched_rx_lat.sv $rtl/sched_rx_flow.sv $rtl/sched_rx.sv"
status=0
# The kernel's modules, then the line-rate frame generator's FIFO and the whole generator (about 20 s:
# yosys evaluates its CRC tables). sched_fg_build alone passes too but costs another 20 s; sched_fg_tx
# alone has a path by design: its FIFO read request f_pop is !f_empty && slot empty. Then the receive
# path, sched_rx (its sched_rx_rmw alone has one by design too: h_take is h_valid && the port is free), the
# message-level core sched_msg (with its heap and divider), with its departure expander (sched_msg_tx), and
# the hardware-in-the-loop transmit path sched_hil (sched_msg_tx, sched_hil_cyc, sched_fg).
for top in sched_skid sched_hop_core sched_axi_rd sched_axi_wr sched_axil_ctrl sched_kernel \
           sched_async_fifo sched_fg sched_rx sched_msg sched_msg_tx sched_hil; do
  msg_srcs="$rtl/sched_msg_heap.sv $rtl/sched_msg_div.sv $rtl/sched_msg_kscan.sv $rtl/sched_msg.sv"
  case $top in
    sched_msg) srcs_top=$msg_srcs ;;
    sched_msg_tx) srcs_top="$msg_srcs $rtl/sched_msg_dep.sv $rtl/sched_msg_tx.sv" ;;
    sched_hil) srcs_top="$msg_srcs $rtl/sched_msg_dep.sv $rtl/sched_msg_tx.sv $rtl/sched_hil_cyc.sv $fg_srcs $rtl/sched_hil.sv" ;;
    sched_async_fifo) srcs_top=$rtl/sched_async_fifo.sv ;;
    sched_fg) srcs_top=$fg_srcs ;;
    sched_rx) srcs_top=$rx_srcs ;;
    *) srcs_top=$srcs ;;
  esac
  list=$out/$top.outputs
  # shellcheck disable=SC2086
  if ! yosys -q -l "$out/$top.log" -p "read_verilog -sv $srcs_top; hierarchy -top $top; proc; flatten; opt_clean;
        tee -q -o $list select -list i:* %coe* o:* %i" >/dev/null 2>&1; then
    echo "check_comb_paths.sh: yosys failed on $top; see $out/$top.log" >&2
    exit 1
  fi
  if [ ! -s "$list" ]; then
    echo "$top: no combinational path from an input port to an output port"
    continue
  fi
  status=1
  while read -r port; do
    name=${port#*/}
    yosys -q -p "read_verilog -sv $srcs_top; hierarchy -top $top; proc; flatten; opt_clean;
        tee -q -o $out/$top.inputs select -list o:$name %cie* i:* %i" >/dev/null 2>&1
    echo "$top: COMBINATIONAL PATH to output $name from: $(sed 's|.*/||' "$out/$top.inputs" | tr '\n' ' ')"
  done < "$list"
done
exit $status
