// Line-rate frame generator: scheduled departures in, Ethernet frames out on an AXI4-Stream of DATA_W
// bits (512 for a 100 GbE CMAC at 322 MHz; 64 also supported), in the fabemu wire format of host/wire
// (fabemu mode: Ethernet II / IPv4 / UDP / fabemu header / zero payload; RoCEv2 mode: Ethernet II /
// IPv4 / UDP 4791 / BTH / fabemu header / zero payload and pad / ICRC), byte for byte what
// host/wire's encode() writes for the same FrameSpec. Frames are built in the core clock domain
// (`clk`: sched_fg_build, one descriptor per cycle), cross to the transmit clock domain (`tx_clk`, the
// MAC's) through an asynchronous FIFO, and leave through the pacing gate (sched_fg_tx), which presents
// each frame's first beat in the transmit cycle its descriptor names (s_sched, a value of `cycle`).
// Byte 0 of a frame is tdata[7:0]; tkeep is all ones but on the last beat; no FCS (the MAC adds it).
`default_nettype none

module sched_fg #(
  parameter int DATA_W  = 512,               // a power of two, 64..512 (every frame >= 2 beats)
  parameter int FIFO_AW = 4                    // 16 built frames ahead of the gate
) (
  input  wire logic          clk,              // core clock domain
  input  wire logic          rst,
  input  wire logic          tx_clk,           // transmit clock domain
  input  wire logic          tx_rst,

  // Departure descriptor (valid/ready, core domain): every field of a host/wire FrameSpec.
  input  wire logic          s_valid,
  output      logic          s_ready,
  input  wire logic [63:0]   s_sched,          // transmit cycle (of `cycle`) of the first beat
  input  wire logic          s_roce,           // 0 fabemu mode, 1 RoCEv2 mode
  input  wire logic [47:0]   s_dst_mac, s_src_mac,   // bits 47:40 are the first byte on the wire
  input  wire logic [31:0]   s_src_ip, s_dst_ip,     // host-order integers (198.18.0.1 == 32'hC6120001)
  input  wire logic [15:0]   s_src_port,
  input  wire logic [15:0]   s_dst_port,       // ignored in RoCEv2 mode (4791)
  input  wire logic [15:0]   s_ip_id,
  input  wire logic [5:0]    s_dscp,
  input  wire logic [1:0]    s_ecn,
  input  wire logic [7:0]    s_kind,           // fabemu header: 1 data, 2 ACK (payload 0)
  input  wire logic [15:0]   s_flags,
  input  wire logic [31:0]   s_src_rank, s_dst_rank, s_seq, s_count,
  input  wire logic [63:0]   s_msg_id, s_msg_len, s_offset, s_tx_time,
  input  wire logic [15:0]   s_payload_bytes,  // zeros after the header (IPv4 limit: <= 65447 fabemu, 65428 RoCEv2)
  input  wire logic [7:0]    s_bth_opcode,     // RoCEv2 BTH (the pad count comes from the payload length)
  input  wire logic          s_bth_se, s_bth_m, s_bth_a,
  input  wire logic [3:0]    s_bth_tver,
  input  wire logic [15:0]   s_bth_pkey,
  input  wire logic [23:0]   s_bth_qp, s_bth_psn,

  // AXI4-Stream master (transmit domain).
  output      logic [DATA_W-1:0]   m_axis_tdata,
  output      logic [DATA_W/8-1:0] m_axis_tkeep,
  output      logic                m_axis_tlast,
  output      logic                m_axis_tvalid,
  input  wire logic                m_axis_tready,

  // Status (transmit domain).
  output      logic [63:0]   cycle,            // free-running, 0 in the cycle after tx_rst
  output      logic [31:0]   frames,           // frames whose first beat has been presented
  output      logic [31:0]   late_frames       // of those, presented after their scheduled cycle
);

  localparam int KW = DATA_W / 8;
  localparam int HDR_W = (912 + DATA_W - 1) / DATA_W * DATA_W;
  localparam int EW = 912 + 64 + 14 + 3 * KW + 32;   // one FIFO entry

  logic          f_valid, w_ready, r_empty, r_pop;
  logic [911:0]  f_img, r_img;
  logic [63:0]   f_sched, r_sched;
  logic [13:0]   f_nbm1, r_nbm1;
  logic [KW-1:0] f_keep, f_icrc_last, f_icrc_pen, r_keep, r_icrc_last, r_icrc_pen;
  logic [31:0]   f_icrc, r_icrc;

  assign s_ready = w_ready;

  sched_fg_build #(.KW(KW)) build (.clk, .rst, .en(w_ready), .s_valid, .s_sched, .s_roce, .s_dst_mac,
    .s_src_mac, .s_src_ip, .s_dst_ip, .s_src_port, .s_dst_port, .s_ip_id, .s_dscp, .s_ecn, .s_kind,
    .s_flags, .s_src_rank, .s_dst_rank, .s_seq, .s_count, .s_msg_id, .s_msg_len, .s_offset, .s_tx_time,
    .s_payload_bytes, .s_bth_opcode, .s_bth_se, .s_bth_m, .s_bth_a, .s_bth_tver, .s_bth_pkey, .s_bth_qp,
    .s_bth_psn, .f_valid, .f_img, .f_sched, .f_nbm1, .f_keep, .f_icrc_last, .f_icrc_pen, .f_icrc);

  sched_async_fifo #(.W(EW), .AW(FIFO_AW)) fifo (
    .w_clk(clk), .w_rst(rst), .w_push(f_valid && w_ready),
    .w_data({f_img, f_sched, f_nbm1, f_keep, f_icrc_last, f_icrc_pen, f_icrc}), .w_ready,
    .r_clk(tx_clk), .r_rst(tx_rst), .r_pop,
    .r_data({r_img, r_sched, r_nbm1, r_keep, r_icrc_last, r_icrc_pen, r_icrc}), .r_empty);

  sched_fg_tx #(.DATA_W(DATA_W), .HDR_W(HDR_W)) tx (.clk(tx_clk), .rst(tx_rst), .f_empty(r_empty),
    .f_pop(r_pop), .f_img(r_img), .f_sched(r_sched), .f_nbm1(r_nbm1), .f_keep(r_keep),
    .f_icrc_last(r_icrc_last), .f_icrc_pen(r_icrc_pen), .f_icrc(r_icrc), .m_axis_tdata, .m_axis_tkeep,
    .m_axis_tlast, .m_axis_tvalid, .m_axis_tready, .cycle, .frames, .late_frames);

  // AXI4-Stream rules (simulation only): tvalid held until tready, the beat stable meanwhile.
  sched_axi_check #(.W(DATA_W + KW + 1), .NAME("m_axis")) check_m_axis (.clk(tx_clk), .rst(tx_rst),
    .valid(m_axis_tvalid), .ready(m_axis_tready), .payload({m_axis_tdata, m_axis_tkeep, m_axis_tlast}));

endmodule

`default_nettype wire
