// Receive path, per-flow accounting of the data frames that are ours. Flow = (src rank, dst rank),
// index src * NPUS + dst (G1, G2; cfg_npus a register; ranks >= NPUS or an index >= 2^AW are counted in
// `oor` and go no further). Two read-modify-write stages (sched_rx_rmw) in series:
// - message state (G2..G4): the flow's current message (id, count, next expected seq, frames and
//   payload bytes so far, first frame's cycle) and the flow's next expected sequence number (the IPv4
//   id, 16 bits). By message id (cfg_flow_seq 0): a higher message id starts a new one (the old one's
//   missing tail, count - expected, is counted lost); a lower id is a late frame of an earlier message
//   (reordered, no other effect); seq above the next expected counts the gap lost, below it reordered.
//   By flow sequence (cfg_flow_seq 1, sched_hil: the card numbers each flow's frames in departure
//   order): a sequence number ahead of the expected one by d (mod 2^16, d < 2^15) counts d lost and
//   moves the expected one past it; one behind is reordered and one lost less (it was counted in a
//   gap); a frame not behind whose message id differs from the current one starts a new message, one
//   behind of another message changes nothing else.
//   The frame that brings the message's frames to `count` emits its arrival record (G5).
// - counters (G5..G7): frames, payload bytes, wire bytes, lost, reordered, CE-marked; 64 bits each.
// Records wait in a FIFO of 2^REC_AW; when it is full a record is dropped (rec_drop).
`default_nettype none

module sched_rx_flow #(
  parameter int AW     = 10,                   // log2 of the flow capacity
  parameter int REC_AW = 5                     // record FIFO depth 2^REC_AW
) (
  input  wire logic          clk,
  input  wire logic          rst,
  input  wire logic [15:0]   cfg_npus,
  input  wire logic          cfg_flow_seq,     // loss and reordering by in_fseq (else by message id and seq)
  input  wire logic          in_valid,         // a data frame that is ours (registers of the parent)
  input  wire logic [31:0]   in_src, in_dst, in_seq, in_count,
  input  wire logic [63:0]   in_msg_id, in_cycle,
  input  wire logic [15:0]   in_payload,
  input  wire logic [19:0]   in_len,
  input  wire logic          in_ce,
  input  wire logic [15:0]   in_fseq,          // the flow's sequence number (the IPv4 id)
  output      logic          oor,              // one cycle per frame of a flow out of range
  output      logic          rec_push, rec_drop,
  output      logic          init_busy,
  // Arrival records: src, dst, message id, frames, payload bytes, first frame's and last frame's cycle.
  output      logic          m_rec_valid,
  input  wire logic          m_rec_ready,
  output      logic [351:0]  m_rec,
  // Host port to the counters (6 x 64 bits: frames at 63:0, then payload bytes, wire bytes, lost,
  // reordered, CE).
  input  wire logic          h_valid, h_write,
  input  wire logic [AW-1:0] h_addr,
  input  wire logic [383:0]  h_wdata,
  output      logic          h_take, h_rsp_valid,
  output      logic [383:0]  h_rsp_data
);

  localparam int SW = 305;                     // state: {flow seq expected, first, bytes, frames, expected, count, msg id, active}

  // --- G1, G2: flow index ---
  logic        v1, v2, ok1, range2;
  logic [31:0] prod1, dst1, idx2;
  always_ff @(posedge clk) begin
    v1 <= in_valid;
    ok1 <= in_src < 32'(cfg_npus) && in_dst < 32'(cfg_npus);
    prod1 <= 32'(in_src[15:0]) * 32'(cfg_npus);
    dst1 <= in_dst;
    v2 <= v1;
    idx2 <= prod1 + dst1;
    range2 <= ok1 && (prod1 + dst1) < (32'd1 << AW);
    if (rst) begin
      v1 <= 1'b0;
      v2 <= 1'b0;
    end
  end
  assign oor = v2 && !range2;

  // The frame's fields at G4 (the state's R2).
  logic [31:0] src4, dst4, seq4, cnt4;
  logic [63:0] msg4, cyc4;
  logic [15:0] pay4;
  logic [19:0] len4;
  logic        ce4;
  logic [15:0] fseq4;
  sched_delay #(.W(32 * 4 + 64 * 2 + 16 + 20 + 1 + 16), .N(4)) d_in (.clk, .en(1'b1),
    .d({in_src, in_dst, in_seq, in_count, in_msg_id, in_cycle, in_payload, in_len, in_ce, in_fseq}),
    .q({src4, dst4, seq4, cnt4, msg4, cyc4, pay4, len4, ce4, fseq4}));

  // --- message state ---
  logic          s_busy, v4;
  logic [AW-1:0] a4;
  logic [SW-1:0] cur, nxt;
  logic          s_h_take, s_h_rsp_valid;
  logic [SW-1:0] s_h_rsp;
  sched_rx_rmw #(.W(SW), .AW(AW)) state (.clk, .rst, .init_busy(s_busy), .in_valid(v2 && range2),
    .in_addr(idx2[AW-1:0]), .cur_valid(v4), .cur_addr(a4), .cur, .nxt, .h_valid(1'b0), .h_write(1'b0),
    .h_addr('0), .h_wdata('0), .h_take(s_h_take), .h_rsp_valid(s_h_rsp_valid), .h_rsp_data(s_h_rsp));

  logic        active, newm, stale, ahead, behind;
  logic [63:0] c_msg, c_bytes, c_first;
  logic [31:0] c_cnt, c_exp, c_frm;
  logic [15:0] c_fexp, fgap, n_fexp;
  assign {c_fexp, c_first, c_bytes, c_frm, c_exp, c_cnt, c_msg, active} = cur;
  assign fgap = fseq4 - c_fexp;                // mod 2^16: ahead below 2^15, behind from it
  assign behind = cfg_flow_seq && fgap[15];
  assign newm = cfg_flow_seq ? !behind && (!active || msg4 != c_msg) : !active || msg4 > c_msg;
  assign stale = cfg_flow_seq ? behind && (!active || msg4 != c_msg) : active && msg4 < c_msg;
  assign ahead = seq4 >= c_exp;
  assign n_fexp = behind ? c_fexp : fseq4 + 16'd1;
  always_comb begin
    if (newm) nxt = {n_fexp, cyc4, 64'(pay4), 32'd1, seq4 + 32'd1, cnt4, msg4, 1'b1};
    else if (stale) nxt = cur;
    else nxt = {n_fexp, c_first, c_bytes + 64'(pay4), c_frm + 32'd1, ahead ? seq4 + 32'd1 : c_exp, c_cnt, c_msg, 1'b1};
  end

  // --- G5: deltas and the record ---
  logic          v5, newm5, stale5, ahead5, active5, ce5, behind5;
  logic [15:0]   fgap5;
  logic [AW-1:0] a5;
  logic [SW-1:0] cur5, nxt5;
  logic [31:0]   src5, dst5, seq5;
  logic [63:0]   cyc5;
  logic [15:0]   pay5;
  logic [19:0]   len5;
  always_ff @(posedge clk) begin
    v5 <= v4;
    a5 <= a4;
    cur5 <= cur;
    nxt5 <= nxt;
    {newm5, stale5, ahead5, active5, ce5, behind5, fgap5} <= {newm, stale, ahead, active, ce4, behind, fgap};
    {src5, dst5, seq5, cyc5, pay5, len5} <= {src4, dst4, seq4, cyc4, pay4, len4};
    if (rst) v5 <= 1'b0;
  end

  logic [63:0]  lost5, tail5;
  logic         reord5, done5;
  logic [31:0]  n_cnt5, n_frm5, o_cnt5, o_exp5, o_frm5, tail32, gap32;
  logic [63:0]  n_msg5, n_bytes5, n_first5;
  // verilator lint_off UNUSED
  logic [63:0]  o_msg5, o_bytes5, o_first5;
  logic         n_act5, o_act5;
  logic [31:0]  n_exp5;
  logic [15:0]  n_fexp5, o_fexp5;
  // verilator lint_on UNUSED
  assign {n_fexp5, n_first5, n_bytes5, n_frm5, n_exp5, n_cnt5, n_msg5, n_act5} = nxt5;
  assign {o_fexp5, o_first5, o_bytes5, o_frm5, o_exp5, o_cnt5, o_msg5, o_act5} = cur5;
  assign tail32 = o_cnt5 - o_exp5;
  assign gap32 = seq5 - o_exp5;
  assign tail5 = active5 && o_frm5 < o_cnt5 ? 64'(tail32) : 64'd0;
  always_comb begin
    lost5 = '0;
    reord5 = 1'b0;
    if (cfg_flow_seq) begin
      if (behind5) begin
        reord5 = 1'b1;
        lost5 = '1;                            // - 1: counted lost when its gap was seen
      end else begin
        lost5 = 64'(fgap5);
      end
    end
    else if (newm5) lost5 = tail5 + 64'(seq5);
    else if (stale5 || !ahead5) reord5 = 1'b1;
    else lost5 = 64'(gap32);
  end
  assign done5 = !stale5 && n_frm5 == n_cnt5;

  // Records (G6) into the FIFO.
  logic         rv6, w_ready;
  logic [351:0] rec6;
  always_ff @(posedge clk) begin
    rv6 <= v5 && done5;
    rec6 <= {cyc5, n_first5, n_bytes5, n_frm5, n_msg5, dst5, src5};
    if (rst) rv6 <= 1'b0;
  end
  assign rec_push = rv6 && w_ready;
  assign rec_drop = rv6 && !w_ready;
  logic r_empty;
  sched_async_fifo #(.W(352), .AW(REC_AW)) rec_fifo (.w_clk(clk), .w_rst(rst), .w_push(rec_push),
    .w_data(rec6), .w_ready, .r_clk(clk), .r_rst(rst), .r_pop(m_rec_valid && m_rec_ready), .r_data(m_rec),
    .r_empty);
  assign m_rec_valid = !r_empty;

  // --- counters (R0 at G5, R2 at G7) ---
  logic          c_busy;
  logic [383:0]  ccur, dlt5, dlt7;
  assign dlt5 = {64'(ce5), 64'(reord5), lost5, 64'(len5), 64'(pay5), 64'd1};
  sched_delay #(.W(384), .N(2)) d_dlt (.clk, .en(1'b1), .d(dlt5), .q(dlt7));
  logic [383:0] cnxt;
  always_comb begin
    for (int k = 0; k < 6; k++) cnxt[64 * k +: 64] = ccur[64 * k +: 64] + dlt7[64 * k +: 64];
  end
  // verilator lint_off UNUSED
  logic          c_v7;
  logic [AW-1:0] c_a7;
  // verilator lint_on UNUSED
  sched_rx_rmw #(.W(384), .AW(AW)) counters (.clk, .rst, .init_busy(c_busy), .in_valid(v5), .in_addr(a5),
    .cur_valid(c_v7), .cur_addr(c_a7), .cur(ccur), .nxt(cnxt), .h_valid, .h_write, .h_addr, .h_wdata,
    .h_take, .h_rsp_valid, .h_rsp_data);
  assign init_busy = s_busy || c_busy;

  // verilator lint_off UNUSED
  logic unused;
  // verilator lint_on UNUSED
  assign unused = ^{s_h_take, s_h_rsp_valid, s_h_rsp, in_src[31:16], idx2[31:AW]};

endmodule

`default_nettype wire
