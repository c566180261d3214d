#!/usr/bin/env bash
# Synthesizes the scheduler kernel and each of its modules with yosys for Xilinx UltraScale+
# (synth_xilinx -family xcup: the U250's and the U55C's family), out of context, and prints per design
# the resources (LUT / SRL = LUTs used as shift registers / FF / BRAM / DSP / carry cells) and the
# longest combinational path between registers (yosys ltp, which counts cells), in logic levels:
#   levels  = LUTs on the longest path + one per carry chain on it (the budget's unit)
#   muxf    = MUXF7/F8/F9 on it: the slice's dedicated muxes behind a LUT, no routing, not a level
#   carry   = carry cells (CARRY4, 4 bits each) on it
#   lutonly = LUTs (+ MUXFs) of the longest path that avoids carry chains
# Registers (FD*, SRL*, block RAM, DSP48E2 with PREG) end a path. ltp picks the path with the most
# cells, so a path with more LUTs and fewer carry cells can hide behind it: lutonly is the check.
# Budget at 300 MHz (3.33 ns), assumed for an UltraScale+ -2 part: about 0.45 ns per LUT level with
# its routing, 0.6 to 1 ns per carry chain of up to 64 bits, 0.6 ns of clock-to-out, setup and clock
# uncertainty: levels <= 6 and lutonly <= 6, no chain longer than 64 bits (16 CARRY4) on a path.
# Yosys gives no timing: a Vivado implementation on a lab machine must confirm.
# Usage: [FRAME_GEN=1|only] [RX=1|only] [MSG=1|only] [HIL=1|only] hw/synth.sh [links...]   (links a power of two,
# 2..65536; default 256 4096; FRAME_GEN, RX and MSG add (1) or select (only) the rows of the frame
# generators, the receive path and the message-level core). ONLY="<tag>..." synthesizes and prints only
# those rows, each named by its tag: the module's name, with _<links> or _<width> where it has several rows
# (sched_kernel_4096, sched_fg_512), e.g. ONLY=sched_msg_dep HIL=only hw/synth.sh: the departure expander
# alone (sched_msg_tx, in the same group, takes over 45 minutes). Logs in ${SYNTH_DIR:-/tmp/fabemu-synth}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rtl=${SYNTH_RTL:-$here/sched/rtl}
out=${SYNTH_DIR:-/tmp/fabemu-synth}
mkdir -p "$out"
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(256 4096)
kernel_srcs="$rtl/fabemu_sched_pkg.sv $rtl/sched_skid.sv $rtl/sched_axi_check.sv $rtl/sched_sdp_ram.sv $rtl/sched_hop_core.sv $rtl/sched_axi_rd.sv $rtl/sched_axi_wr.sv $rtl/sched_axil_ctrl.sv $rtl/sched_kernel.sv"

# skip <tag>: true when ONLY is set and does not name the tag.
skip() { [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $1 "* ]]; }

# synth <tag> <top> <chparam or ''> <sources...>: one yosys run; writes $out/<tag>.{log,stat,lut,carry,ltp,ltp2}.
synth() {
  local tag=$1 top=$2 param=$3; shift 3
  if skip "$tag"; then return 0; fi
  local srcs=("$@") existing=()
  for f in "${srcs[@]}"; do [ -f "$f" ] && existing+=("$f"); done
  local seq='t:FD* t:RAMB* %u t:SRL* %u t:DSP48E2 r:PREG=1 %i %u'
  if ! yosys -q -l "$out/$tag.log" -p "read_verilog -sv ${existing[*]}; ${param}
      synth_xilinx -family xcup -top $top -flatten -noiopad;
      tee -q -o $out/$tag.stat stat;
      tee -q -o $out/$tag.lut select -list t:LUT*;
      tee -q -o $out/$tag.muxf select -list t:MUXF*;
      tee -q -o $out/$tag.carry select -list t:CARRY*;
      tee -q -o $out/$tag.ltp ltp -noff $seq %n;
      tee -q -o $out/$tag.ltp2 ltp -noff $seq t:CARRY* %u %n" >/dev/null 2>&1; then
    echo "synth.sh: yosys failed for $tag; see $out/$tag.log" >&2
    tail -5 "$out/$tag.log" >&2
    exit 1
  fi
}

# count <tag> <regex>: cells of the types matching regex in the last stat.
count() { awk -v pat="$2" '/Number of cells/{delete c} $1 ~ pat && NF==2 {c[$1]=$2} END{s=0; for (k in c) s+=c[k]; print s}' "$out/$1.stat"; }

# path <tag> <ltp file>: "levels muxf chains carry lut" of the path in that ltp output.
path() {
  awk -v lutf="$out/$1.lut" -v muxf="$out/$1.muxf" -v carf="$out/$1.carry" '
    BEGIN { while ((getline l < lutf) > 0) { sub(/^[^\/]*\//, "", l); lut[l] = 1 }
            while ((getline l < muxf) > 0) { sub(/^[^\/]*\//, "", l); mux[l] = 1 }
            while ((getline l < carf) > 0) { sub(/^[^\/]*\//, "", l); car[l] = 1 } }
    match($0, /\(via .*\)$/) {
      c = substr($0, RSTART + 5, RLENGTH - 6)
      if (c in lut) { n_lut++; in_chain = 0 }
      else if (c in mux) { n_mux++; in_chain = 0 }
      else if (c in car) { n_car++; if (!in_chain) n_chain++; in_chain = 1 }
      else in_chain = 0
    }
    END { printf "%d %d %d %d %d\n", n_lut + n_chain, n_mux, n_chain, n_car, n_lut }' "$2"
}

row() {
  local tag=$1 name=$2 links=$3
  if skip "$tag"; then return 0; fi
  read -r levels muxf chains carry _ < <(path "$tag" "$out/$tag.ltp")
  read -r _ muxf2 _ _ lut2 < <(path "$tag" "$out/$tag.ltp2")
  printf '%-16s %6s %6s %5s %6s %6s %6s %4s %6s | %6s %5s %6s %6s %7s\n' "$name" "$links" \
    "$(count "$tag" '^LUT[1-6]$')" "$(count "$tag" '^SRL(16E|C32E)$')" "$(count "$tag" '^FD[CPRS]E?$')" \
    "$(count "$tag" '^RAMB36E2$')" "$(count "$tag" '^RAMB18E2$')" "$(count "$tag" '^DSP48E2$')" \
    "$(count "$tag" '^CARRY[48]$')" "$levels" "$muxf" "$chains" "$carry" "$lut2 (+$muxf2)"
}

printf '%-16s %6s %6s %5s %6s %6s %6s %4s %6s | %6s %5s %6s %6s %7s\n' module links LUT SRL FF RAMB36 RAMB18 DSP CARRY \
  levels muxf chains carry lutonly
if [ "${FRAME_GEN:-0}" != only ] && [ "${RX:-0}" != only ] && [ "${MSG:-0}" != only ] && [ "${HIL:-0}" != only ]; then
for m in sched_axi_rd sched_axi_wr sched_axil_ctrl; do
  synth "$m" "$m" "" "$rtl/fabemu_sched_pkg.sv" "$rtl/sched_skid.sv" "$rtl/$m.sv"
  row "$m" "$m" -
done
for links in "${sizes[@]}"; do
  w=0; n=1
  while [ $n -lt "$links" ]; do n=$((n * 2)); w=$((w + 1)); done
  if [ $n -ne "$links" ] || [ $w -lt 1 ] || [ $w -gt 16 ]; then echo "synth.sh: $links is not a power of two in 2..65536" >&2; exit 2; fi
  synth "sched_hop_core_$links" sched_hop_core "chparam -set LINK_ADDR_W $w sched_hop_core;" \
    "$rtl/sched_skid.sv" "$rtl/sched_sdp_ram.sv" "$rtl/sched_hop_core.sv"
  row "sched_hop_core_$links" sched_hop_core "$links"
  # shellcheck disable=SC2086
  synth "sched_kernel_$links" sched_kernel "chparam -set LINK_ADDR_W $w sched_kernel;" $kernel_srcs
  row "sched_kernel_$links" sched_kernel "$links"
done

fi  # FRAME_GEN != only && RX != only && MSG != only

# The message-level core (issue 46 item 2): MSG=1 hw/synth.sh adds its rows, MSG=only prints only them.
# sched_msg at the hw-emu build's sizes (rtl_models/CMakeLists.txt: 1024 links, 2^16 route link ids, 4096
# messages, 16384 pool entries), its event heap at that size (2^14 nodes of 141 bits), its bound scan and its divider.
if [ "${MSG:-0}" != 0 ]; then
  msg_srcs="$rtl/sched_msg_heap.sv $rtl/sched_msg_div.sv $rtl/sched_msg_kscan.sv $rtl/sched_msg.sv"
  # shellcheck disable=SC2086
  synth sched_msg sched_msg "chparam -set LINK_ADDR_W 10 -set ROUTE_AW 16 -set MSG_AW 12 -set PKT_AW 14 sched_msg;" $msg_srcs
  row sched_msg sched_msg 1024
  synth sched_msg_heap sched_msg_heap "chparam -set EW 141 -set HI 14 sched_msg_heap;" "$rtl/sched_msg_heap.sv"
  row sched_msg_heap sched_msg_heap -
  synth sched_msg_kscan sched_msg_kscan "chparam -set MA 12 sched_msg_kscan;" "$rtl/sched_msg_kscan.sv"
  row sched_msg_kscan sched_msg_kscan -
  synth sched_msg_div sched_msg_div "" "$rtl/sched_msg_div.sv"
  row sched_msg_div sched_msg_div -
fi

# The hardware-in-the-loop additions (issue 46 item 5): HIL=1 hw/synth.sh adds their rows, HIL=only prints
# only them: the departure expander sched_msg_dep (4096 run slots, as MSG_AW 12), the scaling to transmit
# cycles sched_hil_cyc (8 side bits: the side fields are wires to the frame generator) and sched_msg_tx
# (sched_msg and sched_msg_dep at the hw-emu build's sizes; over 45 minutes of yosys on a shared 2-core machine,
# stopped there: no figure for it in sched_hil.md).
if [ "${HIL:-0}" != 0 ]; then
  synth sched_msg_dep sched_msg_dep "chparam -set SA 12 sched_msg_dep;" "$rtl/sched_msg_heap.sv" "$rtl/sched_msg_dep.sv"
  row sched_msg_dep sched_msg_dep -
  synth sched_hil_cyc sched_hil_cyc "chparam -set SW 8 sched_hil_cyc;" "$rtl/sched_hil_cyc.sv"
  row sched_hil_cyc sched_hil_cyc -
  hil_srcs="$rtl/sched_msg_heap.sv $rtl/sched_msg_div.sv $rtl/sched_msg_kscan.sv $rtl/sched_msg.sv $rtl/sched_msg_dep.sv $rtl/sched_msg_tx.sv"
  # shellcheck disable=SC2086
  synth sched_msg_tx sched_msg_tx "chparam -set LINK_ADDR_W 10 -set ROUTE_AW 16 -set MSG_AW 12 -set PKT_AW 14 sched_msg_tx;" $hil_srcs
  row sched_msg_tx sched_msg_tx 1024
fi
if [ "${HIL:-0}" = only ]; then exit 0; fi

if [ "${MSG:-0}" = only ]; then exit 0; fi

# The frame generators (not part of the kernel): FRAME_GEN=1 hw/synth.sh [links...] adds their rows,
# FRAME_GEN=only prints only them. sched_frame_gen: the single-clock 64-bit stage; sched_fg: the
# line-rate generator (build pipeline, async FIFO, transmit gate) at DATA_W 512 and 64.
if [ "${FRAME_GEN:-0}" != 0 ] && [ "${RX:-0}" != only ]; then
  synth sched_frame_gen sched_frame_gen "" "$rtl/sched_frame_gen.sv"
  row sched_frame_gen sched_frame_gen -
  fg_srcs="$rtl/sched_axi_check.sv $rtl/sched_delay.sv $rtl/sched_crc_lin.sv $rtl/sched_crc_mulmod.sv $rtl/sched_crc_xpow8.sv $rtl/sched_csum_tree.sv $rtl/sched_csum_fold.sv $rtl/sched_fg_layout.sv $rtl/sched_fg_build.sv $rtl/sched_async_fifo.sv $rtl/sched_fg_tx.sv $rtl/sched_fg.sv"
  for w in 512 64; do
    # shellcheck disable=SC2086
    synth "sched_fg_$w" sched_fg "chparam -set DATA_W $w sched_fg;" $fg_srcs
    row "sched_fg_$w" "sched_fg/$w" -
  done
  # Its CRC blocks alone: the header CRC over 56 bytes (what sched_frame_gen does in one cycle), the
  # ICRC's 100-byte block, x^(8n) for the zero payload and the product that applies it.
  for nb in 56 100; do
    synth "sched_crc_lin_$nb" sched_crc_lin "chparam -set NB $nb sched_crc_lin;" "$rtl/sched_crc_lin.sv"
    row "sched_crc_lin_$nb" "sched_crc_lin/$nb" -
  done
  synth sched_crc_xpow8 sched_crc_xpow8 "" "$rtl/sched_crc_mulmod.sv" "$rtl/sched_crc_xpow8.sv"
  row sched_crc_xpow8 sched_crc_xpow8 -
fi  # FRAME_GEN != only

# The receive path (not part of the kernel): RX=1 hw/synth.sh [links...] adds its rows, RX=only prints
# only them: sched_rx at DATA_W 512 and 64 (1024 flows, 48-bit histogram counts), and its latency
# histogram and per-flow stages alone.
if [ "${RX:-0}" != 0 ]; then
  rx_srcs="$rtl/sched_axi_check.sv $rtl/sched_delay.sv $rtl/sched_sdp_ram.sv $rtl/sched_crc_lin.sv $rtl/sched_csum_tree.sv $rtl/sched_csum_fold.sv $rtl/sched_async_fifo.sv $rtl/sched_rx_rmw.sv $rtl/sched_rx_usum.sv $rtl/sched_rx_capture.sv $rtl/sched_rx_parse.sv $rtl/sched_rx_mulq.sv $rtl/sched_rx_bucket.sv $rtl/sched_rx_lat.sv $rtl/sched_rx_flow.sv $rtl/sched_rx.sv"
  for w in 512 64; do
    # shellcheck disable=SC2086
    synth "sched_rx_$w" sched_rx "chparam -set DATA_W $w sched_rx;" $rx_srcs
    row "sched_rx_$w" "sched_rx/$w" -
  done
  for m in sched_rx_lat sched_rx_flow; do
    # shellcheck disable=SC2086
    synth "$m" "$m" "" $rx_srcs
    row "$m" "$m" -
  done
fi  # RX
