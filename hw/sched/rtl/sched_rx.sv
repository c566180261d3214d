// The card's receive path, the mirror of sched_fg: an AXI4-Stream slave of DATA_W bits (byte 0 of a
// frame in tdata[7:0], tkeep, tlast, no FCS), in the receive (MAC) clock domain with the MAC's
// free-running `cycle` counter. Per frame: the first beat's cycle as its timestamp (sched_rx_capture);
// the verdict of host/wire's decode() (the RoCEv2 ICRC not checked), counted by reason
// (sched_rx_parse); for frames that are ours, the latency histogram (sched_rx_lat); for data frames
// that are ours, the per-flow counters, sequence tracking and per-message arrival records
// (sched_rx_flow). One frame per cycle sustained; every output is a register or a function of
// registers. The counters and the histogram are read (and may be written) through one host port.
`default_nettype none

module sched_rx #(
  parameter int DATA_W  = 512,                 // a power of two, 64..512
  parameter int FLOW_AW = 10,                  // flow capacity 2^FLOW_AW (1..16)
  parameter int HIST_CW = 48,                  // bits of a histogram bucket's count (1..64)
  parameter int REC_AW  = 5                    // arrival record FIFO: 2^REC_AW records
) (
  input  wire logic                clk,
  input  wire logic                rst,
  // AXI4-Stream slave. tready is low only while the RAMs are cleared after reset.
  input  wire logic [DATA_W-1:0]   s_axis_tdata,
  input  wire logic [DATA_W/8-1:0] s_axis_tkeep,
  input  wire logic                s_axis_tlast,
  input  wire logic                s_axis_tvalid,
  output      logic                s_axis_tready,
  input  wire logic [63:0]         cycle,        // the MAC's free-running cycle counter
  // Configuration (quasi-static registers of the shell).
  input  wire logic                cfg_roce,     // RoCEv2 mode, else fabemu mode
  input  wire logic [15:0]         cfg_port_lo, cfg_port_hi,   // fabemu mode: our UDP destination ports
  input  wire logic [15:0]         cfg_npus,     // flow index = src * cfg_npus + dst
  input  wire logic [63:0]         cfg_ps_per_cycle_q32,       // Q32.32 ps per cycle (period / dilation)
  input  wire logic                cfg_flow_seq, // loss and reordering by the IPv4 id as a per-flow sequence
  // Arrival records (valid/ready).
  output      logic                m_rec_valid,
  input  wire logic                m_rec_ready,
  output      logic [31:0]         m_rec_src, m_rec_dst, m_rec_frames,
  output      logic [63:0]         m_rec_msg_id, m_rec_bytes, m_rec_first_cycle, m_rec_last_cycle,
  // Host port: one request at a time. Space 0: flow counters (h_addr = flow, 384 bits), 1: histogram
  // (h_addr = bucket), 2: global counters (read only, h_addr = counter, 64 bits). A write answers too.
  input  wire logic                h_valid,
  output      logic                h_ready,
  input  wire logic                h_write,
  input  wire logic [1:0]          h_space,
  input  wire logic [15:0]         h_addr,
  input  wire logic [383:0]        h_wdata,
  output      logic                h_rsp_valid,
  output      logic [383:0]        h_rsp_data
);

  initial begin
    if (DATA_W < 64 || DATA_W > 512 || (DATA_W & (DATA_W - 1)) != 0) $error("sched_rx: bad DATA_W");
    if (FLOW_AW < 1 || FLOW_AW > 16 || HIST_CW < 1 || HIST_CW > 64) $error("sched_rx: bad FLOW_AW/HIST_CW");
  end

  localparam int KW = DATA_W / 8;
  localparam int NG = 20;                      // global counters (sched_rx.md)

  logic        ready_reg, lat_busy, flow_busy;
  assign s_axis_tready = ready_reg;

  logic          f_valid;
  logic [911:0]  f_hdr;
  logic [15:0]   f_nbb;
  logic [KW-1:0] f_keep;
  logic [63:0]   f_cycle;
  logic [31:0]   f_usum;
  sched_rx_capture #(.DATA_W(DATA_W)) capture (.clk, .rst, .accept(s_axis_tvalid && ready_reg),
    .tdata(s_axis_tdata), .tkeep(s_axis_tkeep), .tlast(s_axis_tlast), .cycle, .f_valid, .f_hdr, .f_nbb,
    .f_keep, .f_cycle, .f_usum);

  logic        p_valid, p_ce;
  logic [3:0]  p_verdict;
  logic [7:0]  p_kind;
  logic [31:0] p_src, p_dst, p_seq, p_count;
  logic [63:0] p_msg_id, p_tx_time, p_cycle;
  logic [15:0] p_payload;
  logic [19:0] p_len;
  logic [15:0] p_ip_id;
  sched_rx_parse #(.KW(KW)) parse (.clk, .rst, .cfg_roce, .cfg_port_lo, .cfg_port_hi, .f_valid, .f_hdr,
    .f_nbb, .f_keep, .f_cycle, .f_usum, .p_valid, .p_verdict, .p_kind, .p_src, .p_dst, .p_seq, .p_count, .p_msg_id,
    .p_tx_time, .p_cycle, .p_payload, .p_len, .p_ce, .p_ip_id);

  logic ours, data;
  assign ours = p_valid && p_verdict == 4'd0;
  assign data = ours && p_kind == 8'd1;

  // The host request, held until its unit takes it.
  logic                  pend, taken, lat_take, lat_rsp_valid, flow_take, flow_rsp_valid;
  logic                  q_write;
  logic [1:0]            q_space;
  logic [15:0]           q_addr;
  logic [383:0]          q_wdata, flow_rsp;
  logic [HIST_CW-1:0]    lat_rsp;
  assign h_ready = !pend;

  logic early, oor, rec_push, rec_drop;
  sched_rx_lat #(.CW(HIST_CW)) lat (.clk, .rst, .cfg_ps_per_cycle_q32, .in_valid(ours), .in_cycle(p_cycle),
    .in_tx_time(p_tx_time), .early, .init_busy(lat_busy), .h_valid(pend && !taken && q_space == 2'd1),
    .h_write(q_write), .h_addr(q_addr[12:0]), .h_wdata(q_wdata[HIST_CW-1:0]), .h_take(lat_take),
    .h_rsp_valid(lat_rsp_valid), .h_rsp_data(lat_rsp));

  logic [351:0] m_rec;
  sched_rx_flow #(.AW(FLOW_AW), .REC_AW(REC_AW)) flow (.clk, .rst, .cfg_npus, .cfg_flow_seq, .in_valid(data), .in_src(p_src),
    .in_dst(p_dst), .in_seq(p_seq), .in_count(p_count), .in_msg_id(p_msg_id), .in_cycle(p_cycle),
    .in_payload(p_payload), .in_len(p_len), .in_ce(p_ce), .in_fseq(p_ip_id), .oor, .rec_push, .rec_drop,
    .init_busy(flow_busy), .m_rec_valid, .m_rec_ready, .m_rec, .h_valid(pend && !taken && q_space == 2'd0),
    .h_write(q_write), .h_addr(q_addr[FLOW_AW-1:0]), .h_wdata(q_wdata), .h_take(flow_take),
    .h_rsp_valid(flow_rsp_valid), .h_rsp_data(flow_rsp));
  assign {m_rec_last_cycle, m_rec_first_cycle, m_rec_bytes, m_rec_frames, m_rec_msg_id, m_rec_dst, m_rec_src} = m_rec;

  // Global counters: 0..13 frames by verdict (host/wire's Verdict: 0 ours), 14 frames, 15 ours but not
  // data (ACK, NACK), 16 data frames of flows out of range, 17 early (tx_time after arrival), 18 records
  // emitted, 19 records dropped (FIFO full).
  logic [63:0] g [NG];
  always_ff @(posedge clk) begin
    if (p_valid) begin
      g[{1'b0, p_verdict}] <= g[{1'b0, p_verdict}] + 64'd1;
      g[14] <= g[14] + 64'd1;
    end
    if (ours && !data) g[15] <= g[15] + 64'd1;
    if (oor) g[16] <= g[16] + 64'd1;
    if (early) g[17] <= g[17] + 64'd1;
    if (rec_push) g[18] <= g[18] + 64'd1;
    if (rec_drop) g[19] <= g[19] + 64'd1;
    ready_reg <= !lat_busy && !flow_busy;

    if (h_valid && !pend) begin
      pend <= 1'b1;
      taken <= 1'b0;
      q_write <= h_write;
      q_space <= h_space;
      q_addr <= h_addr;
      q_wdata <= h_wdata;
    end
    if (lat_take || flow_take) taken <= 1'b1;
    h_rsp_valid <= 1'b0;
    if (pend && (q_space[1] || lat_rsp_valid || flow_rsp_valid)) begin
      pend <= 1'b0;
      h_rsp_valid <= 1'b1;
      h_rsp_data <= q_space[1] ? (q_space[0] || q_addr >= 16'(NG) ? '0 : 384'(g[q_addr[4:0]]))
                  : q_space[0] ? 384'(lat_rsp) : flow_rsp;
    end
    if (rst) begin
      for (int i = 0; i < NG; i++) g[i] <= '0;
      ready_reg <= 1'b0;
      pend <= 1'b0;
      h_rsp_valid <= 1'b0;
    end
  end

  // AXI4-Stream rules (simulation only) on the record stream.
  sched_axi_check #(.W(352), .NAME("m_rec")) check_m_rec (.clk, .rst, .valid(m_rec_valid), .ready(m_rec_ready),
    .payload(m_rec));

endmodule

`default_nettype wire
