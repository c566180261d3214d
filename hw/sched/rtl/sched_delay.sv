// N-cycle delay line with a common clock enable and no reset, so synthesis maps it to shift-register
// LUTs (SRL16E/SRLC32E with CE) instead of flip-flops. N = 0 is a wire.
`default_nettype none

module sched_delay #(
  parameter int W = 1,
  parameter int N = 1
) (
  input  wire logic         clk,
  input  wire logic         en,
  input  wire logic [W-1:0] d,
  output      logic [W-1:0] q
);

  if (N == 0) begin : g_wire
    // verilator lint_off UNUSED
    logic unused;
    // verilator lint_on UNUSED
    assign unused = ^{clk, en};
    assign q = d;
  end else begin : g_regs
    logic [W-1:0] r [N];
    always_ff @(posedge clk) begin
      if (en) begin
        r[0] <= d;
        for (int i = 1; i < N; i++) r[i] <= r[i - 1];
      end
    end
    assign q = r[N - 1];
  end

endmodule

`default_nettype wire
