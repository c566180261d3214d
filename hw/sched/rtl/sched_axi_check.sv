// Simulation-only AXI handshake rules for one valid/ready channel (AMBA AXI A3.2.1): once VALID is
// high it stays high until READY, and the payload stays stable meanwhile; neither is X out of reset.
// Immediate assertions checked at each clock edge (Verilator --assert); empty under synthesis.
`default_nettype none

module sched_axi_check #(
  parameter int W    = 1,       // payload bits
  parameter     NAME = "axi"    // channel name in the messages
) (
  input wire logic         clk,
  input wire logic         rst,
  input wire logic         valid,
  input wire logic         ready,
  input wire logic [W-1:0] payload
);

`ifndef SYNTHESIS
  logic         stalled_reg;   // valid && !ready at the previous edge
  logic [W-1:0] payload_reg;

  always_ff @(posedge clk) begin
    if (!rst && stalled_reg) begin
      assert (valid) else $error("%s: VALID fell before READY", NAME);
      assert (payload == payload_reg) else $error("%s: payload changed while VALID waited for READY", NAME);
    end
    stalled_reg <= !rst && valid && !ready;
    payload_reg <= payload;
  end
`else
  // verilator lint_off UNUSED
  logic unused;
  // verilator lint_on UNUSED
  assign unused = ^{clk, rst, valid, ready, payload};
`endif

endmodule

`default_nettype wire
