// sched_hil_cyc: a departure's emulated time to the transmit cycle of its first beat (issue 46 item 5;
// hw/sched/doc/sched_hil.md): cycle = c0 + ceil(t * k / 2^48), k = cycles per emulated picosecond in
// Q16.48 (the dilation D over the transmit clock's period: D / period_ps), c0 = the cycle of emulated time
// 0. Exact integer arithmetic on the 112 bits of t * k that are kept, in 32-bit limbs: the four 32 x 32-bit
// partial products (stage 1); each limb's column summed, three operands through a 3:2 compressor into one
// carry chain of 34 bits (stage 2); the columns' carries propagated, 34 and 16 bits (stage 3); the ceiling
// and c0, a 64-bit add (stage 4). `en` moves the four stages at once (the frame generator's s_ready, a
// register); the side fields ride along.
`default_nettype none

module sched_hil_cyc #(
  parameter int SW = 8  // side fields, bits
) (
  input  wire logic          clk,
  input  wire logic          rst,
  input  wire logic          en,
  input  wire logic [63:0]   cfg_k,    // Q16.48 transmit cycles per emulated ps
  input  wire logic [63:0]   cfg_c0,   // transmit cycle of emulated time 0
  input  wire logic          i_valid,
  input  wire logic [63:0]   i_time,
  input  wire logic [SW-1:0] i_side,
  output      logic          o_valid,
  output      logic [63:0]   o_cycle,
  output      logic [SW-1:0] o_side
);

  logic [63:0]  p_ll, p_lh, p_hl;         // stage 1: t_lo * k_lo, t_lo * k_hi, t_hi * k_lo, t_hi * k_hi
  /* verilator lint_off UNUSEDSIGNAL */
  logic [63:0]  p_hh;                     // bits 48 up land past the 112 bits kept
  logic [33:0]  s1;                       // stage 2: the column of bits 32..63 (the low 16 bits feed only the ceiling)
  /* verilator lint_on UNUSEDSIGNAL */
  logic [33:0]  s2;                       //          bits 64..95
  logic [15:0]  s3;                       //          bits 96..111
  logic         nz0;                      //          bits 0..31 not all zero
  logic [15:0]  u1;                       // stage 3: bits 48..63
  logic [31:0]  u2;                       //          bits 64..95
  logic [15:0]  u3;                       //          bits 96..111
  logic         nz1;                      //          bits 0..47 not all zero
  logic [2:0]   v;
  logic [SW-1:0] d1, d2, d3;
  logic [33:0]  t2;

  wire logic [31:0] t_lo = i_time[31:0], t_hi = i_time[63:32], k_lo = cfg_k[31:0], k_hi = cfg_k[63:32];
  assign t2 = {2'b00, s2[31:0]} + {32'd0, s1[33:32]};

  // Stage 2's columns, a + b + c each: a 3:2 compressor (sum and carry words), then one carry chain.
  wire logic [31:0] a1 = p_ll[63:32], b1 = p_lh[31:0], c1 = p_hl[31:0];
  wire logic [31:0] a2 = p_lh[63:32], b2 = p_hl[63:32], c2 = p_hh[31:0];
  wire logic [31:0] x1 = a1 ^ b1 ^ c1, m1 = (a1 & b1) | (a1 & c1) | (b1 & c1);
  wire logic [31:0] x2 = a2 ^ b2 ^ c2, m2 = (a2 & b2) | (a2 & c2) | (b2 & c2);

  always_ff @(posedge clk) begin
    if (rst) begin
      v <= '0;
      o_valid <= 1'b0;
    end else if (en) begin
      v <= {v[1:0], i_valid};
      o_valid <= v[2];
    end
    if (en) begin
      p_ll <= 64'(t_lo) * 64'(k_lo);
      p_lh <= 64'(t_lo) * 64'(k_hi);
      p_hl <= 64'(t_hi) * 64'(k_lo);
      p_hh <= 64'(t_hi) * 64'(k_hi);
      d1 <= i_side;
      s1 <= {2'b00, x1} + {1'b0, m1, 1'b0};
      s2 <= {2'b00, x2} + {1'b0, m2, 1'b0};
      s3 <= p_hh[47:32];
      nz0 <= |p_ll[31:0];
      d2 <= d1;
      u1 <= s1[31:16];
      u2 <= t2[31:0];
      u3 <= s3 + 16'(s2[33:32]) + 16'(t2[33:32]);
      nz1 <= nz0 || |s1[15:0];
      d3 <= d2;
      o_cycle <= cfg_c0 + {u3, u2, u1} + {63'd0, nz1};
      o_side <= d3;
    end
  end

endmodule

`default_nettype wire
