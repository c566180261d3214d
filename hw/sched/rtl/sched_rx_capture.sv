// Receive path, beat stage: the AXI4-Stream beats registered as they are accepted, together with the
// `cycle` of the accepting clock (the frame's timestamp is that of its first beat: the cycle the MAC's
// first beat was accepted, as OSNT and Corundum stamp). The first 114 bytes of each frame (the longest
// header: RoCEv2 up to the fabemu header's end) are kept; when a frame's last beat arrives, one frame
// record leaves: those bytes (the current beat merged in), the number of full beats before the last,
// the last beat's tkeep and the first beat's cycle, with the UDP segment's word sum (sched_rx_usum),
// six cycles after the last beat's accepting edge. One record per cycle at most (one-beat frames).
`default_nettype none

module sched_rx_capture #(
  parameter int DATA_W = 512                   // a power of two, 64..512
) (
  input  wire logic                clk,
  input  wire logic                rst,
  input  wire logic                accept,       // tvalid && tready of this cycle
  input  wire logic [DATA_W-1:0]   tdata,
  input  wire logic [DATA_W/8-1:0] tkeep,
  input  wire logic                tlast,
  input  wire logic [63:0]         cycle,
  output      logic                f_valid,      // a frame ended (its record, one cycle)
  output      logic [911:0]        f_hdr,        // bytes 0..113 (byte i at 8i; beyond the frame: stale)
  output      logic [15:0]         f_nbb,        // full beats before the last (saturating)
  output      logic [DATA_W/8-1:0] f_keep,       // tkeep of the last beat
  output      logic [63:0]         f_cycle,      // cycle of the first beat's acceptance
  output      logic [31:0]         f_usum        // sum of the UDP segment's words (sched_rx_usum)
);

  localparam int KW = DATA_W / 8;
  localparam int NHB = (912 + DATA_W - 1) / DATA_W;   // beats that hold header bytes

  // The accepted beat, registered with its cycle.
  logic              b_valid, b_last;
  logic [DATA_W-1:0] b_data;
  logic [KW-1:0]     b_keep;
  logic [63:0]       b_cycle;

  logic                    in_frame;
  logic [15:0]             idx, cur_idx;             // beat index in the frame
  logic [NHB*DATA_W-1:0]   hdr, merged;
  logic [63:0]             first_cycle;
  // The record as the last beat completes it; it waits 4 cycles for the UDP sum.
  logic                    r_valid;
  logic [911:0]            r_hdr;
  logic [15:0]             r_nbb;
  logic [KW-1:0]           r_keep;
  logic [63:0]             r_cycle;

  assign cur_idx = in_frame ? idx : 16'd0;
  always_comb begin
    merged = hdr;
    for (int j = 0; j < NHB; j++) begin
      if (cur_idx == 16'(j)) merged[DATA_W * j +: DATA_W] = b_data;
    end
  end

  always_ff @(posedge clk) begin
    b_valid <= accept;
    if (accept) begin
      b_data <= tdata;
      b_keep <= tkeep;
      b_last <= tlast;
      b_cycle <= cycle;
    end

    r_valid <= b_valid && b_last;
    if (b_valid) begin
      hdr <= merged;
      if (!in_frame) first_cycle <= b_cycle;
      in_frame <= !b_last;
      idx <= &cur_idx ? cur_idx : cur_idx + 16'd1;
      if (b_last) begin
        r_hdr <= merged[911:0];
        r_nbb <= cur_idx;
        r_keep <= b_keep;
        r_cycle <= in_frame ? first_cycle : b_cycle;
      end
    end
    if (rst) begin
      b_valid <= 1'b0;
      r_valid <= 1'b0;
      in_frame <= 1'b0;
    end
  end

  logic        u_valid;
  logic [3:1]  rv;
  sched_rx_usum #(.KW(KW)) usum (.clk, .rst, .b_valid, .b_first(!in_frame), .b_last, .b_idx(cur_idx),
    .b_data, .b_keep, .u_valid, .u_sum(f_usum));
  sched_delay #(.W(912 + 16 + KW + 64), .N(4)) d_rec (.clk, .en(1'b1), .d({r_hdr, r_nbb, r_keep, r_cycle}),
    .q({f_hdr, f_nbb, f_keep, f_cycle}));
  always_ff @(posedge clk) begin
    rv <= {rv[2:1], r_valid};
    f_valid <= rv[3];
    if (rst) begin
      rv <= '0;
      f_valid <= 1'b0;
    end
  end
  // u_valid is f_valid (the sum of the frame's last beat leaves in the same cycle).
  // verilator lint_off UNUSED
  logic unused;
  // verilator lint_on UNUSED
  assign unused = u_valid;

endmodule

`default_nettype wire
