// Asynchronous FIFO between two unrelated clocks: 2^AW entries of W bits in distributed RAM (written in
// the write clock, read asynchronously at the read pointer), Gray-coded pointers crossed by two-flop
// synchronizers, registered room and empty flags (a push or pop reaches the other side 2 to 3 of its
// clock edges later, so both are pessimistic, never wrong). Push only when w_ready, pop only when
// !r_empty; r_data is the oldest entry while !r_empty. w_ready is a register of positive polarity, so
// a pipeline can use it as its clock enable and still map to shift-register LUTs (yosys's shregmap
// takes no inverted enable).
`default_nettype none

module sched_async_fifo #(
  parameter int W  = 8,
  parameter int AW = 4
) (
  input  wire logic         w_clk,
  input  wire logic         w_rst,
  input  wire logic         w_push,
  input  wire logic [W-1:0] w_data,
  output      logic         w_ready,       // not full
  input  wire logic         r_clk,
  input  wire logic         r_rst,
  input  wire logic         r_pop,
  output      logic [W-1:0] r_data,
  output      logic         r_empty
);

  logic [W-1:0] mem [2**AW];

  function automatic logic [AW:0] gray(input logic [AW:0] b);
    gray = b ^ (b >> 1);
  endfunction

  // --- write side ---
  logic [AW:0] wbin, wbin_next, wgray;
  (* ASYNC_REG = "TRUE" *) logic [AW:0] rgray_w1, rgray_w2;   // read pointer, synchronized
  assign wbin_next = wbin + (AW+1)'(w_push);
  always_ff @(posedge w_clk) begin
    if (w_push) mem[wbin[AW-1:0]] <= w_data;
    wbin <= wbin_next;
    wgray <= gray(wbin_next);
    // Full: the next write pointer is a whole lap ahead of the read pointer (Gray: top two bits differ).
    w_ready <= gray(wbin_next) != {~rgray_w2[AW:AW-1], rgray_w2[AW-2:0]};
    rgray_w1 <= rgray;
    rgray_w2 <= rgray_w1;
    if (w_rst) begin
      wbin <= '0;
      wgray <= '0;
      w_ready <= 1'b1;
      rgray_w1 <= '0;
      rgray_w2 <= '0;
    end
  end

  // --- read side ---
  logic [AW:0] rbin, rbin_next, rgray;
  (* ASYNC_REG = "TRUE" *) logic [AW:0] wgray_r1, wgray_r2;   // write pointer, synchronized
  assign rbin_next = rbin + (AW+1)'(r_pop);
  always_ff @(posedge r_clk) begin
    rbin <= rbin_next;
    rgray <= gray(rbin_next);
    r_empty <= gray(rbin_next) == wgray_r2;
    wgray_r1 <= wgray;
    wgray_r2 <= wgray_r1;
    if (r_rst) begin
      rbin <= '0;
      rgray <= '0;
      r_empty <= 1'b1;
      wgray_r1 <= '0;
      wgray_r2 <= '0;
    end
  end
  assign r_data = mem[rbin[AW-1:0]];

endmodule

`default_nettype wire
