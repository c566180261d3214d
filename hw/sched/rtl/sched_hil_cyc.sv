// sched_hil_cyc: a departure's emulated time to the transmit cycle of its first beat (issue 46 item 5;
// hw/sched/doc/sched_hil.md): cycle = c0 + ceil(t * k / 2^48), k = cycles per emulated picosecond in
// Q16.48 (the dilation D over the transmit clock's period: D / period_ps), c0 = the cycle of emulated time
// 0. Exact integer arithmetic on the 128-bit product t * k: four 32 x 32-bit partial products (stage 1),
// their sum (stage 2), the ceiling and c0 (stage 3). `en` moves the three stages at once (the frame
// generator's s_ready, a register); the side fields ride along.
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
  /* verilator lint_on UNUSEDSIGNAL */
  logic [111:0] prod;                     // stage 2 (the cycle wraps at 2^64: bits 112 up are not kept)
  logic [1:0]   v;
  logic [SW-1:0] s1, s2;

  wire logic [31:0] t_lo = i_time[31:0], t_hi = i_time[63:32], k_lo = cfg_k[31:0], k_hi = cfg_k[63:32];

  always_ff @(posedge clk) begin
    if (rst) begin
      v <= '0;
      o_valid <= 1'b0;
    end else if (en) begin
      v <= {v[0], i_valid};
      o_valid <= v[1];
    end
    if (en) begin
      p_ll <= 64'(t_lo) * 64'(k_lo);
      p_lh <= 64'(t_lo) * 64'(k_hi);
      p_hl <= 64'(t_hi) * 64'(k_lo);
      p_hh <= 64'(t_hi) * 64'(k_hi);
      s1 <= i_side;
      prod <= {48'd0, p_ll} + ({48'd0, p_lh} << 32) + ({48'd0, p_hl} << 32) + {p_hh[47:0], 64'd0};
      s2 <= s1;
      o_cycle <= cfg_c0 + prod[111:48] + {63'd0, |prod[47:0]};
      o_side <= s2;
    end
  end

endmodule

`default_nettype wire
