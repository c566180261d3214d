// Receive path, the UDP checksum's data sum: the RFC 1071 sum (unfolded) of the 16-bit big-endian words
// of each frame's UDP segment, bytes 34 up to the end of the IPv4 datagram (14 + IPv4 total length; bytes
// after it, Ethernet padding, are not covered), as the beats pass. Per beat (stage B: the capture's
// registered beat) the segment's lanes are found from the total length (read from the beat that holds
// bytes 16-17, or kept from it); stage C masks the others and feeds a pipelined adder tree of KW/2 words
// (sched_csum_tree, LEV stages, then 3 - LEV delay stages so that the latency is the same at every
// width); the frame's sum accumulates per beat and leaves with its last beat, 5 cycles after stage B.
// The pseudo-header is added, and the sum folded, in sched_rx_parse.
`default_nettype none

module sched_rx_usum #(
  parameter int KW = 64                        // bytes per beat, 8..64
) (
  input  wire logic          clk,
  input  wire logic          rst,
  input  wire logic          b_valid,          // the capture's registered beat
  input  wire logic          b_first, b_last,
  input  wire logic [15:0]   b_idx,            // beat index in the frame (saturating)
  input  wire logic [8*KW-1:0] b_data,
  input  wire logic [KW-1:0] b_keep,
  output      logic          u_valid,          // a frame's last beat has been summed
  output      logic [31:0]   u_sum
);

  localparam int LW = $clog2(KW);
  localparam int IPL_BEAT = 16 / KW;           // the beat holding bytes 16-17 (the IPv4 total length)
  localparam int IPL_LANE = 16 % KW;
  localparam int LEV = KW >= 64 ? 3 : KW >= 16 ? 2 : 1;   // sched_csum_tree's stages for KW/2 words

  // --- stage B: the segment's lanes in this beat: [lo, hi) ---
  logic [15:0] ipl_reg, ipl;
  logic signed [23:0] pos0, lo_s, hi_s;
  logic [LW:0] lo, hi;
  assign ipl = b_idx == 16'(IPL_BEAT) ? {b_data[8 * IPL_LANE +: 8], b_data[8 * (IPL_LANE + 1) +: 8]} : ipl_reg;
  assign pos0 = 24'(b_idx) << LW;
  assign lo_s = 24'sd34 - pos0;
  assign hi_s = 24'sd14 + 24'(ipl) - pos0;
  assign lo = lo_s <= 0 ? '0 : lo_s >= 24'(KW) ? (LW+1)'(KW) : lo_s[LW:0];
  assign hi = hi_s <= 0 ? '0 : hi_s >= 24'(KW) ? (LW+1)'(KW) : hi_s[LW:0];

  // --- stage C: masked words into the tree ---
  logic            c_valid, c_first, c_last;
  logic [8*KW-1:0] c_data;
  logic [KW-1:0]   c_en;
  logic [8*KW-1:0] words;
  always_ff @(posedge clk) begin
    if (b_valid && b_idx == 16'(IPL_BEAT)) ipl_reg <= ipl;
    c_valid <= b_valid;
    c_first <= b_first;
    c_last <= b_last;
    c_data <= b_data;
    for (int l = 0; l < KW; l++) c_en[l] <= b_keep[l] && (LW+1)'(l) >= lo && (LW+1)'(l) < hi;
    if (rst) c_valid <= 1'b0;
  end
  for (genvar i = 0; i < KW / 2; i++) begin : g_w
    assign words[16 * i +: 16] = {c_en[2 * i] ? c_data[16 * i +: 8] : 8'd0, c_en[2 * i + 1] ? c_data[16 * i + 8 +: 8] : 8'd0};
  end
  logic [23:0] tsum0, tsum;
  sched_csum_tree #(.N(KW / 2)) tree (.clk, .en(1'b1), .words, .q(tsum0));
  sched_delay #(.W(24), .N(3 - LEV)) d_sum (.clk, .en(1'b1), .d(tsum0), .q(tsum));

  // --- the frame's sum (three stages after C) ---
  logic [3:1]  tv, tf, tl;
  logic [31:0] acc, acc_next;
  always_ff @(posedge clk) begin
    tv <= {tv[2:1], c_valid};
    tf <= {tf[2:1], c_first};
    tl <= {tl[2:1], c_last};
    if (rst) tv <= '0;
  end
  assign acc_next = (tf[3] ? 32'd0 : acc) + 32'(tsum);
  always_ff @(posedge clk) begin
    if (tv[3]) acc <= acc_next;
    u_valid <= tv[3] && tl[3];
    if (tv[3] && tl[3]) u_sum <= acc_next;
    if (rst) u_valid <= 1'b0;
  end

endmodule

`default_nettype wire
