// a * b modulo the CRC-32 polynomial in the reflected representation of the registers (bit 31 is
// x^0, as host/wire's mulmodp), XORed with OUT_XOR, in two clock-enabled stages: stage 1 the
// carry-less product (coefficient m of x^m: the XOR of up to 32 bit products a_i b_j with
// 62 - i - j = m), stage 2 its reduction (x^m mod P for m = 0..62, a constant 63 x 32 map). Crossing
// n zero bytes multiplies a register by x^(8n): this is how the ICRC crosses a frame's zero payload.
`default_nettype none

module sched_crc_mulmod #(
  parameter logic [31:0] OUT_XOR = 32'd0
) (
  input  wire logic        clk,
  input  wire logic        en,
  input  wire logic [31:0] a,
  input  wire logic [31:0] b,
  output      logic [31:0] q
);

  localparam logic [31:0] POLY = 32'hEDB8_8320;

  // Bit o of x^m mod P for m = 0..62, at [32m + o].
  function automatic logic [63*32-1:0] xpows();
    logic [63*32-1:0] t;
    logic [31:0] p;
    p = 32'h8000_0000;  // x^0
    for (int m = 0; m < 63; m++) begin
      t[32 * m +: 32] = p;
      p = p[0] ? (p >> 1) ^ POLY : p >> 1;
    end
    xpows = t;
  endfunction
  localparam logic [63*32-1:0] XP = xpows();

  function automatic logic [62:0] red_row(input int o);
    logic [62:0] r;
    for (int m = 0; m < 63; m++) r[m] = XP[32 * m + o];
    red_row = r;
  endfunction

  logic [62:0] prod, prod_reg;   // coefficient of x^m at bit m
  logic [31:0] red;

  for (genvar m = 0; m < 63; m++) begin : g_prod
    logic [31:0] terms;
    for (genvar i = 0; i < 32; i++) begin : g_term
      if (62 - m - i >= 0 && 62 - m - i < 32) begin : g_in
        assign terms[i] = a[i] & b[62 - m - i];
      end else begin : g_out
        assign terms[i] = 1'b0;
      end
    end
    assign prod[m] = ^terms;
  end

  for (genvar o = 0; o < 32; o++) begin : g_red
    localparam logic [62:0] R = red_row(o);
    assign red[o] = OUT_XOR[o] ^ (^(prod_reg & R));
  end

  always_ff @(posedge clk) begin
    if (en) begin
      prod_reg <= prod;
      q <= red;
    end
  end

endmodule

`default_nettype wire
