// sched_msg_tx: the message-level core with its departure stream (issue 46 item 5): sched_msg and the
// departure expander sched_msg_dep behind it. sched_msg's ports, plus one departure per packet leaving its
// first link, in (time, run sequence) order (hw/sched/doc/sched_msg_dep.md). The hw-emu of the card
// (rtl_models/sched_msg_hwemu.h) and the hardware-in-the-loop top (sched_hil) use it.
`default_nettype none

module sched_msg_tx #(
  parameter int LINK_ADDR_W = 10,
  parameter int ROUTE_AW    = 12,
  parameter int MSG_AW      = 10,
  parameter int PKT_AW      = 12
) (
  input  wire logic                   clk,
  input  wire logic                   rst,
  input  wire logic [31:0]            cfg_mtu,
  input  wire logic [PKT_AW:0]        cfg_pool_slots,
  input  wire logic                   lt_wr,
  input  wire logic [LINK_ADDR_W-1:0] lt_addr,
  input  wire logic [63:0]            lt_rate,
  input  wire logic [63:0]            lt_latency,
  input  wire logic [63:0]            lt_free,
  input  wire logic                   rt_valid,
  output      logic                   rt_ready,
  input  wire logic [LINK_ADDR_W-1:0] rt_link,
  input  wire logic                   d_valid,
  output      logic                   d_ready,
  input  wire logic [63:0]            d_ready_ps,
  input  wire logic [63:0]            d_id,
  input  wire logic [39:0]            d_bytes,
  input  wire logic [7:0]             d_hops,
  input  wire logic [ROUTE_AW-1:0]    d_route,
  input  wire logic [23:0]            d_src,
  input  wire logic [23:0]            d_dst,
  input  wire logic                   wm_wr,
  input  wire logic [63:0]            wm,
  output      logic                   r_valid,
  input  wire logic                   r_ready,
  output      logic [63:0]            r_id,
  output      logic [63:0]            r_time,
  output      logic [31:0]            r_packets,
  output      logic [63:0]            known_until,
  output      logic                   idle,
  output      logic                   err_pool,
  output      logic [63:0]            n_events,
  output      logic [63:0]            n_hops,
  output      logic [63:0]            n_scan,
  input  wire logic [LINK_ADDR_W-1:0] cnt_addr,
  output      logic [63:0]            cnt_bytes,
  output      logic [63:0]            cnt_packets,
  // departures (sched_msg_dep)
  output      logic                   o_valid,
  input  wire logic                   o_ready,
  output      logic [63:0]            o_time,
  output      logic [63:0]            o_id,
  output      logic [23:0]            o_src,
  output      logic [23:0]            o_dst,
  output      logic [39:0]            o_seq,
  output      logic [39:0]            o_count,
  output      logic [31:0]            o_bytes,
  output      logic [39:0]            o_msg_len,
  output      logic [63:0]            o_offset,
  output      logic                   dep_idle,
  output      logic [63:0]            n_runs,
  output      logic [63:0]            n_deps
);

  logic        x_valid, x_ready;
  logic [63:0] x_id, x_start, x_ser, x_safe;
  logic [23:0] x_src, x_dst;
  logic [39:0] x_bytes, x_packets;
  logic [31:0] x_lastb;

  sched_msg #(.LINK_ADDR_W(LINK_ADDR_W), .ROUTE_AW(ROUTE_AW), .MSG_AW(MSG_AW), .PKT_AW(PKT_AW)) core (
    .clk, .rst, .cfg_mtu, .cfg_pool_slots, .lt_wr, .lt_addr, .lt_rate, .lt_latency, .lt_free, .rt_valid,
    .rt_ready, .rt_link, .d_valid, .d_ready, .d_ready_ps, .d_id, .d_bytes, .d_hops, .d_route, .d_src, .d_dst,
    .wm_wr, .wm, .r_valid, .r_ready, .r_id, .r_time, .r_packets, .x_valid, .x_ready, .x_id, .x_src, .x_dst,
    .x_bytes, .x_packets, .x_lastb, .x_start, .x_ser, .x_safe, .known_until, .idle, .err_pool, .n_events,
    .n_hops, .n_scan, .cnt_addr, .cnt_bytes, .cnt_packets);

  sched_msg_dep #(.SA(MSG_AW)) dep (
    .clk, .rst, .cfg_mtu, .x_valid, .x_ready, .x_id, .x_src, .x_dst, .x_bytes, .x_packets, .x_lastb, .x_start,
    .x_ser, .safe(x_safe), .o_valid, .o_ready, .o_time, .o_id, .o_src, .o_dst, .o_seq, .o_count, .o_bytes,
    .o_msg_len, .o_offset, .idle(dep_idle), .n_runs, .n_deps);

endmodule

`default_nettype wire
