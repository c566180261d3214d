// An internet checksum from the sum of its 16-bit words (RFC 1071), in two clock-enabled stages: the
// sum folded to 16 bits with its end-around carries (t = low + high, then low(t) + carry(t)), then
// inverted. ZERO_AS_FFFF (UDP, RFC 768): a checksum of 0 is sent as 0xFFFF, as host/wire's encode().
`default_nettype none

module sched_csum_fold #(
  parameter int IW           = 24,
  parameter bit ZERO_AS_FFFF = 1'b0
) (
  input  wire logic          clk,
  input  wire logic          en,
  input  wire logic [IW-1:0] sum,
  output      logic [15:0]   q
);

  logic [16:0] t_reg;
  logic [15:0] u;
  assign u = t_reg[15:0] + {15'd0, t_reg[16]};

  always_ff @(posedge clk) begin
    if (en) begin
      t_reg <= {1'b0, sum[15:0]} + 17'(sum[IW-1:16]);
      // ~u == 0 exactly when u is all ones.
      q <= (ZERO_AS_FFFF && &u) ? 16'hFFFF : ~u;
    end
  end

endmodule

`default_nettype wire
