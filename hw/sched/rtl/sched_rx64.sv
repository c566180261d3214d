// sched_rx with a 64-bit stream, for its Verilator test (one top module per Verilated model).
`default_nettype none

module sched_rx64 (
  input  wire logic clk, rst,
  input  wire logic [63:0] s_axis_tdata,
  input  wire logic [7:0] s_axis_tkeep,
  input  wire logic s_axis_tlast, s_axis_tvalid,
  output      logic s_axis_tready,
  input  wire logic [63:0] cycle,
  input  wire logic cfg_roce,
  input  wire logic [15:0] cfg_port_lo, cfg_port_hi, cfg_npus,
  input  wire logic [63:0] cfg_ps_per_cycle_q32,
  input  wire logic cfg_flow_seq,
  output      logic m_rec_valid,
  input  wire logic m_rec_ready,
  output      logic [31:0] m_rec_src, m_rec_dst, m_rec_frames,
  output      logic [63:0] m_rec_msg_id, m_rec_bytes, m_rec_first_cycle, m_rec_last_cycle,
  input  wire logic h_valid,
  output      logic h_ready,
  input  wire logic h_write,
  input  wire logic [1:0] h_space,
  input  wire logic [15:0] h_addr,
  input  wire logic [383:0] h_wdata,
  output      logic h_rsp_valid,
  output      logic [383:0] h_rsp_data
);
  sched_rx #(.DATA_W(64)) rx (.*);
endmodule

`default_nettype wire
