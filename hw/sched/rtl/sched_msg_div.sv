// Restoring divider for sched_msg's segmentation: a message of `num` bytes at an MTU of `den` bytes is
// quot = floor(num / den) whole packets and rem bytes more. One quotient bit a cycle: `done` rises NW + 1
// cycles after `start` (start while busy restarts). den must be nonzero (sched_msg's MTU is at least 1).
`default_nettype none

module sched_msg_div #(
  parameter int NW = 40,  // dividend width
  parameter int DW = 32   // divisor width
) (
  input  wire logic          clk,
  input  wire logic          rst,
  input  wire logic          start,
  input  wire logic [NW-1:0] num,
  input  wire logic [DW-1:0] den,
  output      logic          done,
  output      logic [NW-1:0] quot,
  output      logic [DW-1:0] rem
);

  logic [DW-1:0]     r;      // partial remainder (< d)
  logic [NW-1:0]     q;      // dividend bits shifting out at the top, quotient bits shifting in
  logic [DW-1:0]     d;
  logic [7:0]        n;      // bits left
  logic              busy;

  wire logic [DW:0] shifted = {r, q[NW-1]};  // one bit wider than the divisor
  wire logic        fits = shifted >= {1'b0, d};

  always_ff @(posedge clk) begin
    if (rst) begin
      busy <= 1'b0;
      done <= 1'b0;
      n <= '0;
    end else if (start) begin
      r <= '0;
      q <= num;
      d <= den;
      n <= 8'(NW);
      busy <= 1'b1;
      done <= 1'b0;
    end else if (busy) begin
      r <= fits ? DW'(shifted - {1'b0, d}) : shifted[DW-1:0];
      q <= {q[NW-2:0], fits};
      n <= n - 1'b1;
      if (n == 1) begin
        busy <= 1'b0;
        done <= 1'b1;
      end
    end
  end

  assign quot = q;
  assign rem = r;

endmodule

`default_nettype wire
