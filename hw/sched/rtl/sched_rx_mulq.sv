// floor(a * b / 2^32) mod 2^64 for 64-bit a and b (b a Q32.32 factor: cycles times picoseconds per
// cycle), in five stages: M1 the fifteen 16 x 16-bit limb products that reach bit 32 and above (one
// DSP48E2 each; the product of the two top limbs only reaches bits 96 up), M2 their sums per diagonal
// (limb weight 16 d), M3 pairs of diagonals, M4 and M5 the result's bits 95:32 in two adders of at most
// 64 bits, so no carry chain is longer than 64 bits.
`default_nettype none

module sched_rx_mulq (
  input  wire logic        clk,
  input  wire logic [63:0] a,
  input  wire logic [63:0] b,
  output      logic [63:0] q
);

  logic [511:0] p1;                            // limb products: a_i * b_j at [32 (4i + j) +: 32]
  logic [203:0] d2;                            // diagonal sums (34 bits), weight 2^(16 d), at [34d +: 34]
  // Bits 31:0 of the product and x3[2]'s above 2^96 are not wanted.
  // verilator lint_off UNUSED
  logic [152:0] x3;                            // d2[2k] + d2[2k+1] << 16 (51 bits), weight 2^(32 k), at [51k +: 51]
  // verilator lint_on UNUSED
  logic [51:0]  z4;                            // (x3[0] >> 32) + x3[1]
  logic [31:0]  x4;                            // x3[2] mod 2^32 (its weight is 2^64: bits 95:64)

  // Diagonal d's terms: the products a_k * b_(d-k), zero where d - k is out of 0..3.
  logic [767:0] t1;                            // term k of diagonal d at [32 (4d + k) +: 32]
  always_comb begin
    for (int d = 0; d < 6; d++) begin
      for (int k = 0; k < 4; k++) begin
        t1[32 * (4 * d + k) +: 32] = (d - k >= 0 && d - k <= 3) ? p1[32 * (4 * k + ((d - k) & 3)) +: 32] : 32'd0;
      end
    end
  end

  always_ff @(posedge clk) begin
    for (int i = 0; i < 4; i++) begin
      for (int j = 0; j < 4; j++) begin
        p1[32 * (4 * i + j) +: 32] <= (i == 3 && j == 3) ? 32'd0 : 32'(a[16 * i +: 16]) * 32'(b[16 * j +: 16]);
      end
    end
    for (int d = 0; d < 6; d++) begin
      d2[34 * d +: 34] <= (34'(t1[32 * (4 * d) +: 32]) + 34'(t1[32 * (4 * d + 1) +: 32])) +
                          (34'(t1[32 * (4 * d + 2) +: 32]) + 34'(t1[32 * (4 * d + 3) +: 32]));
    end
    for (int k = 0; k < 3; k++) x3[51 * k +: 51] <= 51'(d2[34 * 2 * k +: 34]) + (51'(d2[34 * (2 * k + 1) +: 34]) << 16);
    z4 <= 52'(x3[50:32]) + 52'(x3[51 +: 51]);
    x4 <= x3[102 +: 32];
    q <= 64'(z4) + {x4, 32'd0};
  end

endmodule

`default_nettype wire
