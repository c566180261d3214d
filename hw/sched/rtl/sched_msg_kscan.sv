// sched_msg's known-until bound: per message slot, whether its delivery record is still to come (live)
// and the earliest delivery it can still have (ed); a scan gives the least ed of the live slots below
// `limit` (all ones when there is none). Four slots per word, in four lanes of block RAM (slot m in lane
// m[1:0] at word m >> 2), so a scan reads four slots a cycle: ceil(limit / 4) + 5 cycles from `start` to
// `done`. The minimum is a pipeline (two lanes, then four, then the running minimum): one 64-bit compare
// per stage.
`default_nettype none

module sched_msg_kscan #(
  parameter int MA = 10  // message slots: 2^MA (MA >= 2)
) (
  input  wire logic          clk,
  input  wire logic          rst,
  input  wire logic          wr,       // slot wr_m: live and ed
  input  wire logic [MA-1:0] wr_m,
  input  wire logic          wr_live,
  input  wire logic [63:0]   wr_ed,
  input  wire logic          start,    // scan slots 0 .. limit - 1
  input  wire logic [MA:0]   limit,
  output      logic          done,     // one cycle; kmin holds the result until the next start
  output      logic [63:0]   kmin
);

  localparam int WA = MA - 2;
  logic [WA:0]   idx, words;
  logic [WA-1:0] raddr;
  logic [3:0]    ok1, ok2;       // the lanes of the word read hold slots below limit
  logic          v1, v2, v3, v4, busy;
  logic [4*65-1:0] rd;           // {live, ed} of the four lanes, lane k at bits 65k
  logic [63:0]   m01, m23, m4, acc;

  genvar k;
  generate
    for (k = 0; k < 4; k = k + 1) begin : g_lane
      (* ram_style = "block" *) logic [64:0] mem [2**WA];
      always_ff @(posedge clk) begin
        if (wr && wr_m[1:0] == k) mem[wr_m[MA-1:2]] <= {wr_live, wr_ed};
        rd[65*k +: 65] <= mem[raddr];
      end
    end
  endgenerate

  function automatic logic [63:0] val(input logic [64:0] w, input logic ok);
    val = ok && w[64] ? w[63:0] : '1;
  endfunction
  function automatic logic [63:0] min2(input logic [63:0] a, input logic [63:0] b);
    min2 = a < b ? a : b;
  endfunction

  always_ff @(posedge clk) begin
    if (rst) begin
      busy <= 1'b0; done <= 1'b0; v1 <= 1'b0; v2 <= 1'b0; v3 <= 1'b0; v4 <= 1'b0;
      idx <= '0; words <= '0; raddr <= '0; kmin <= '1;
    end else begin
      done <= 1'b0;
      if (start) begin
        busy <= 1'b1;
        idx <= '0;
        words <= (WA + 1)'((limit + (MA + 1)'(3)) >> 2);
        acc <= '1;
        v1 <= 1'b0;
      end else if (busy) begin
        v1 <= idx < words;
        if (idx < words) begin
          raddr <= idx[WA-1:0];
          idx <= idx + 1'b1;
          ok1 <= {{idx, 2'd3} < limit, {idx, 2'd2} < limit, {idx, 2'd1} < limit, {idx, 2'd0} < limit};
        end
      end
      // v1: raddr holds the word; v2: rd holds it; v3: m01, m23; v4: m4.
      v2 <= v1; v3 <= v2; v4 <= v3;
      ok2 <= ok1;
      m01 <= min2(val(rd[0 +: 65], ok2[0]), val(rd[65 +: 65], ok2[1]));
      m23 <= min2(val(rd[130 +: 65], ok2[2]), val(rd[195 +: 65], ok2[3]));
      m4 <= min2(m01, m23);
      if (v4) acc <= min2(acc, m4);
      if (busy && !start && !(idx < words) && !v1 && !v2 && !v3 && !v4) begin
        busy <= 1'b0;
        done <= 1'b1;
        kmin <= acc;
      end
    end
  end

endmodule

`default_nettype wire
