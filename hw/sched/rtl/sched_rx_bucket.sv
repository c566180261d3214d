// emu::LogHistogram::bucket_of(v) (emulator/histogram.h) of a 64-bit value in four stages: v below 256
// is its own bucket; above, with e = bit_width(v) - 8 (1..56), the bucket is e * 128 + (v >> e), i.e.
// (e + 1) << 7 | the 7 bits under v's top bit. B1 finds the top set bit of each byte, B2 the top byte
// (so the top bit), B3 and B4 shift v right by e in two 8:1 steps. Buckets are 0..7423 (13 bits).
`default_nettype none

module sched_rx_bucket (
  input  wire logic        clk,
  input  wire logic [63:0] v,
  output      logic [12:0] q
);

  // B1: per byte, any bit set and the top set bit's index.
  logic [63:0] v1;
  logic [7:0]  nz1;
  logic [23:0] top0, top1;                     // byte g's top bit at [3g +: 3]
  always_comb begin
    for (int g = 0; g < 8; g++) begin
      top0[3 * g +: 3] = 3'd0;
      for (int k = 0; k < 8; k++) if (v[8 * g + k]) top0[3 * g +: 3] = 3'(k);
    end
  end
  always_ff @(posedge clk) begin
    v1 <= v;
    for (int g = 0; g < 8; g++) nz1[g] <= v[8 * g +: 8] != 8'd0;
    top1 <= top0;
  end

  // B2: the top bit (8 * byte + bit) and e = top - 7 (used when top >= 8).
  logic [63:0] v2;
  logic        small2;
  logic [5:0]  e2;
  logic [5:0] top;
  always_comb begin
    top = '0;
    for (int g = 0; g < 8; g++) if (nz1[g]) top = {3'(g), top1[3 * g +: 3]};
  end
  always_ff @(posedge clk) begin
    v2 <= v1;
    small2 <= nz1[7:1] == 7'd0;
    e2 <= top - 6'd7;
  end

  // B3: v >> (8 * e[5:3]) (the low 16 bits are enough: the 8 bits wanted start at e <= 56); B4: >> e[2:0].
  logic [15:0] w3;
  logic [7:0]  low3;
  logic        small3;
  logic [5:0]  e3;
  always_ff @(posedge clk) begin
    w3 <= 16'((v2 >> {e2[5:3], 3'd0}));
    low3 <= v2[7:0];
    small3 <= small2;
    e3 <= e2;
    q <= small3 ? 13'(low3) : {e3 + 6'd1, 7'd0} | 13'(7'((w3 >> e3[2:0])));
  end

endmodule

`default_nettype wire
