// sched_fg with a 64-bit stream, for its Verilator test (one top module per Verilated model).
`default_nettype none

module sched_fg64 (
  input  wire logic clk, rst, tx_clk, tx_rst,
  input  wire logic s_valid,
  output      logic s_ready,
  input  wire logic [63:0] s_sched,
  input  wire logic s_roce,
  input  wire logic [47:0] s_dst_mac, s_src_mac,
  input  wire logic [31:0] s_src_ip, s_dst_ip,
  input  wire logic [15:0] s_src_port, s_dst_port, s_ip_id,
  input  wire logic [5:0] s_dscp,
  input  wire logic [1:0] s_ecn,
  input  wire logic [7:0] s_kind,
  input  wire logic [15:0] s_flags,
  input  wire logic [31:0] s_src_rank, s_dst_rank, s_seq, s_count,
  input  wire logic [63:0] s_msg_id, s_msg_len, s_offset, s_tx_time,
  input  wire logic [15:0] s_payload_bytes,
  input  wire logic [7:0] s_bth_opcode,
  input  wire logic s_bth_se, s_bth_m, s_bth_a,
  input  wire logic [3:0] s_bth_tver,
  input  wire logic [15:0] s_bth_pkey,
  input  wire logic [23:0] s_bth_qp, s_bth_psn,
  output      logic [63:0] m_axis_tdata,
  output      logic [7:0] m_axis_tkeep,
  output      logic m_axis_tlast, m_axis_tvalid,
  input  wire logic m_axis_tready,
  output      logic [63:0] cycle,
  output      logic [31:0] frames, late_frames
);
  sched_fg #(.DATA_W(64)) fg (.*);
endmodule

`default_nettype wire
