// x^(8n) mod the CRC-32 polynomial (reflected registers, bit 31 is x^0) for a byte count n < 2^16, in
// three clock-enabled stages: two 256-entry ROMs give x^(8 lo) and x^(2048 hi) for n = 256 hi + lo
// (as host/wire's kZeroOps), and sched_crc_mulmod multiplies them. A register times this crosses n
// zero bytes (the CRC of zeros is the register shifted by the polynomial's powers).
`default_nettype none

module sched_crc_xpow8 (
  input  wire logic        clk,
  input  wire logic        en,
  input  wire logic [15:0] n,
  output      logic [31:0] q
);

  localparam logic [31:0] POLY = 32'hEDB8_8320;

  // a * b mod P (reflected), bit by bit, for the tables.
  function automatic logic [31:0] mulmod(input logic [31:0] a, input logic [31:0] b);
    logic [31:0] p, x;
    p = '0;
    x = b;
    for (int i = 31; i >= 0; i--) begin
      if (a[i]) p = p ^ x;
      x = x[0] ? (x >> 1) ^ POLY : x >> 1;
    end
    mulmod = p;
  endfunction

  // Entry v (v = 0..255) at [32v +: 32]: x^(8 * step * v).
  function automatic logic [256*32-1:0] table_of(input int step);
    logic [256*32-1:0] t;
    logic [31:0] base, p;
    base = 32'h8000_0000;
    for (int s = 0; s < 8 * step; s++) base = base[0] ? (base >> 1) ^ POLY : base >> 1;
    p = 32'h8000_0000;
    for (int v = 0; v < 256; v++) begin
      t[32 * v +: 32] = p;
      p = mulmod(p, base);
    end
    table_of = t;
  endfunction
  localparam logic [256*32-1:0] LO = table_of(1);
  localparam logic [256*32-1:0] HI = table_of(256);

  logic [31:0] lo_reg, hi_reg;
  always_ff @(posedge clk) begin
    if (en) begin
      lo_reg <= LO[32 * n[7:0] +: 32];
      hi_reg <= HI[32 * n[15:8] +: 32];
    end
  end

  sched_crc_mulmod mul (.clk, .en, .a(lo_reg), .b(hi_reg), .q);

endmodule

`default_nettype wire
