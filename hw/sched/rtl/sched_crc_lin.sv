// The CRC-32 (IEEE, reflected, as zlib) register contribution of an NB-byte block, pipelined in two
// clock-enabled stages: q = INIT ^ L(d), where L(d) is the raw register a block d leaves from a zero
// register (the CRC is linear in the data) and INIT the constant a non-zero start register leaves
// across the block (plus any final inversion). Stage 1 XORs each output bit's data bits within each
// 8-byte word (at most 64 inputs: 3 LUT6 levels), stage 2 XORs the words' partials (at most 16 for
// 128 bytes: 2 levels). The masks are constants computed at elaboration. Byte 0 of the block (the
// first on the wire) is d[7:0].
`default_nettype none

module sched_crc_lin #(
  parameter int          NB   = 56,
  parameter logic [31:0] INIT = 32'd0
) (
  input  wire logic            clk,
  input  wire logic            en,
  input  wire logic [8*NB-1:0] d,
  output      logic [31:0]     q
);

  localparam logic [31:0] POLY = 32'hEDB8_8320;
  localparam int NG = (NB + 7) / 8;   // 8-byte words
  localparam int DW = 64 * NG;

  // Column j (data bit j = 8 * byte + bit) of the linear map: the register the block with only that
  // bit set leaves from zero. Built from the last byte backwards: one byte earlier is 8 more shifts.
  function automatic logic [32*8*NB-1:0] columns();
    logic [32*8*NB-1:0] t;
    logic [31:0] c;
    for (int i = NB - 1; i >= 0; i--) begin
      for (int k = 0; k < 8; k++) begin
        c = i == NB - 1 ? 32'd1 << k : t[32 * (8 * (i + 1) + k) +: 32];
        for (int s = 0; s < 8; s++) c = c[0] ? (c >> 1) ^ POLY : c >> 1;
        t[32 * (8 * i + k) +: 32] = c;
      end
    end
    columns = t;
  endfunction
  localparam logic [32*8*NB-1:0] COLS = columns();

  // Row o: the data bits output bit o depends on, padded to whole words.
  function automatic logic [DW-1:0] row(input int o);
    logic [DW-1:0] m;
    m = '0;
    for (int j = 0; j < 8 * NB; j++) m[j] = COLS[32 * j + o];
    row = m;
  endfunction

  logic [DW-1:0]   dw;
  logic [32*NG-1:0] part, part_reg;   // word g's partial of bit o at [32g + o]
  assign dw = DW'(d);

  for (genvar o = 0; o < 32; o++) begin : g_bit
    localparam logic [DW-1:0] M = row(o);
    for (genvar g = 0; g < NG; g++) begin : g_word
      assign part[32 * g + o] = ^(dw[64 * g +: 64] & M[64 * g +: 64]);
    end
  end

  // Stage 2: each output bit is the XOR of its NG word partials (a balanced reduction).
  logic [31:0] sum;
  for (genvar o = 0; o < 32; o++) begin : g_sum
    logic [NG-1:0] col;
    for (genvar g = 0; g < NG; g++) begin : g_col
      assign col[g] = part_reg[32 * g + o];
    end
    assign sum[o] = INIT[o] ^ (^col);
  end

  always_ff @(posedge clk) begin
    if (en) begin
      part_reg <= part;
      q <= sum;
    end
  end

endmodule

`default_nettype wire
