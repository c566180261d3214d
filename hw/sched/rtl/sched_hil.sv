// sched_hil: the card's transmit path for hardware in the loop (issue 46 item 5; hw/sched/doc/sched_hil.md).
// The message-level core and its departure expander (sched_msg_tx), each departure's emulated time
// scaled to the transmit cycle of its first beat (sched_hil_cyc: cycle = c0 + ceil(t * k / 2^48)), and the
// line-rate frame generator (sched_fg, DATA_W bits, fabemu mode) presenting each packet's frame in that
// cycle. The frame's fields follow host/wire's default address plan (rank r: MAC 02:fe:00 and r's low 24
// bits, IPv4 198.18.0.1 + r, UDP port 47000; AddressPlan::make_default) and the fabemu header of a data
// packet (tx_time = the modelled departure), and the IPv4 id the flow's departure sequence number: each
// (src, dst) flow's frames numbered 0, 1, 2, ... (mod 2^16) in departure order, so that the receive path
// (sched_rx, cfg_flow_seq) counts loss and reordering along the flow whatever the message ids' order.
// Core domain `clk`, transmit domain `tx_clk`.
`default_nettype none

module sched_hil #(
  parameter int LINK_ADDR_W = 10,
  parameter int ROUTE_AW    = 12,
  parameter int MSG_AW      = 10,
  parameter int PKT_AW      = 12,
  parameter int DATA_W      = 512,
  parameter int FSEQ_RW     = 5     // rank bits of the flow sequence table (2^(2 FSEQ_RW) flows)
) (
  input  wire logic                   clk,
  input  wire logic                   rst,
  input  wire logic                   tx_clk,
  input  wire logic                   tx_rst,
  input  wire logic [31:0]            cfg_mtu,
  input  wire logic [PKT_AW:0]        cfg_pool_slots,
  input  wire logic [63:0]            cfg_k,      // Q16.48 transmit cycles per emulated ps (sched_hil_cyc)
  input  wire logic [63:0]            cfg_c0,     // transmit cycle of emulated time 0
  input  wire logic [5:0]             cfg_dscp,
  input  wire logic [1:0]             cfg_ecn,    // the frames' ECN field (2: ECT(0), so a device may mark CE)
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
  output      logic                   dep_idle,
  output      logic [63:0]            n_runs,
  output      logic [63:0]            n_deps,
  // the wire (transmit domain)
  output      logic [DATA_W-1:0]      m_axis_tdata,
  output      logic [DATA_W/8-1:0]    m_axis_tkeep,
  output      logic                   m_axis_tlast,
  output      logic                   m_axis_tvalid,
  input  wire logic                   m_axis_tready,
  output      logic [63:0]            cycle,
  output      logic [31:0]            frames,
  output      logic [31:0]            late_frames
);

  localparam int SW = 64 + 64 + 24 + 24 + 32 + 32 + 16 + 40 + 64 + 16;  // time, id, src, dst, seq, count, bytes, len, offset, flow seq
  localparam int NF = 1 << (2 * FSEQ_RW);

  logic          o_valid, o_ready, c_valid, fg_ready;
  logic [63:0]   o_time, o_id, o_offset, c_cycle;
  logic [23:0]   o_src, o_dst;
  // The host keeps a message's packets below 2^32 and the MTU below 2^16 (a frame's fields): the top bits
  // of the expander's seq, count and bytes are zero here.
  /* verilator lint_off UNUSEDSIGNAL */
  logic [39:0]   o_seq, o_count;
  logic [31:0]   o_bytes;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [39:0]   o_msg_len;
  logic [SW-1:0] c_side;

  sched_msg_tx #(.LINK_ADDR_W(LINK_ADDR_W), .ROUTE_AW(ROUTE_AW), .MSG_AW(MSG_AW), .PKT_AW(PKT_AW)) msg (
    .clk, .rst, .cfg_mtu, .cfg_pool_slots, .lt_wr, .lt_addr, .lt_rate, .lt_latency, .lt_free, .rt_valid,
    .rt_ready, .rt_link, .d_valid, .d_ready, .d_ready_ps, .d_id, .d_bytes, .d_hops, .d_route, .d_src, .d_dst,
    .wm_wr, .wm, .r_valid, .r_ready, .r_id, .r_time, .r_packets, .known_until, .idle, .err_pool, .n_events,
    .n_hops, .n_scan, .cnt_addr, .cnt_bytes, .cnt_packets, .o_valid, .o_ready, .o_time, .o_id, .o_src, .o_dst,
    .o_seq, .o_count, .o_bytes, .o_msg_len, .o_offset, .dep_idle, .n_runs, .n_deps);

  // The flow's departure sequence number, taken as the departure leaves the expander: flow (src, dst) by
  // the ranks' low FSEQ_RW bits (the host keeps ranks below 2^FSEQ_RW), a table of the next number (a
  // distributed RAM read in the same cycle) and a valid bit per flow, cleared by the reset.
  logic [NF-1:0] fs_valid;
  logic [15:0]   fs_next [NF];
  logic [15:0]   fs_cur;
  wire logic [2*FSEQ_RW-1:0] fs_idx = {o_src[FSEQ_RW-1:0], o_dst[FSEQ_RW-1:0]};
  assign fs_cur = fs_valid[fs_idx] ? fs_next[fs_idx] : 16'd0;
  always_ff @(posedge clk) begin
    if (o_valid && fg_ready) begin
      fs_next[fs_idx] <= fs_cur + 16'd1;
      fs_valid[fs_idx] <= 1'b1;
    end
    if (rst) fs_valid <= '0;
  end

  // The frame generator's build pipeline and this scaling move on one enable (its s_ready, a register).
  assign o_ready = fg_ready;
  sched_hil_cyc #(.SW(SW)) cyc (
    .clk, .rst, .en(fg_ready), .cfg_k, .cfg_c0, .i_valid(o_valid), .i_time(o_time),
    .i_side({o_time, o_id, o_src, o_dst, o_seq[31:0], o_count[31:0], o_bytes[15:0], o_msg_len, o_offset, fs_cur}),
    .o_valid(c_valid), .o_cycle(c_cycle), .o_side(c_side));

  logic [63:0] f_time, f_id, f_offset;
  logic [23:0] f_src, f_dst;
  logic [31:0] f_seq, f_count;   // the host keeps a message's packets below 2^32 and the MTU below 2^16
  logic [15:0] f_bytes;
  logic [39:0] f_len;
  logic [15:0] f_ip_id;
  assign {f_time, f_id, f_src, f_dst, f_seq, f_count, f_bytes, f_len, f_offset, f_ip_id} = c_side;

  sched_fg #(.DATA_W(DATA_W)) fg (
    .clk, .rst, .tx_clk, .tx_rst, .s_valid(c_valid), .s_ready(fg_ready), .s_sched(c_cycle), .s_roce(1'b0),
    .s_dst_mac({24'h02FE00, f_dst}), .s_src_mac({24'h02FE00, f_src}),
    .s_src_ip(32'hC6120001 + {8'd0, f_src}), .s_dst_ip(32'hC6120001 + {8'd0, f_dst}),
    .s_src_port(16'd47000), .s_dst_port(16'd47000), .s_ip_id(f_ip_id), .s_dscp(cfg_dscp), .s_ecn(cfg_ecn),
    .s_kind(8'd1), .s_flags(16'd0), .s_src_rank({8'd0, f_src}), .s_dst_rank({8'd0, f_dst}),
    .s_seq(f_seq), .s_count(f_count), .s_msg_id(f_id), .s_msg_len({24'd0, f_len}),
    .s_offset(f_offset), .s_tx_time(f_time), .s_payload_bytes(f_bytes), .s_bth_opcode(8'd0),
    .s_bth_se(1'b0), .s_bth_m(1'b0), .s_bth_a(1'b0), .s_bth_tver(4'd0), .s_bth_pkey(16'd0), .s_bth_qp(24'd0),
    .s_bth_psn(24'd0), .m_axis_tdata, .m_axis_tkeep, .m_axis_tlast, .m_axis_tvalid, .m_axis_tready, .cycle,
    .frames, .late_frames);

endmodule

`default_nettype wire
