// Read-modify-write of one block-RAM word per clock with the hazards forwarded: the receive path's
// per-flow state, per-flow counters and latency histogram. A request (in_valid, in_addr; registers of
// the parent) reads its word; two edges later (stage R2) `cur` is that word as the two requests ahead
// of it left it (forwarded from their writes, which the read missed), the parent computes `nxt` from
// it combinationally, and `nxt` is written at the end of R2. Requests to one address in consecutive
// cycles are therefore exact. The RAM is cleared after reset (one word per cycle: init_busy high, no
// requests meanwhile). A host port reads a word in a cycle without a request (a snapshot: up to two
// updates in flight may be missing) and writes one when no request is in the pipeline.
`default_nettype none

module sched_rx_rmw #(
  parameter int W  = 64,                       // word width
  parameter int AW = 10                        // log2 of the number of words
) (
  input  wire logic          clk,
  input  wire logic          rst,
  output      logic          init_busy,        // clearing the RAM after reset
  // Pipeline.
  input  wire logic          in_valid,         // R0: read in_addr
  input  wire logic [AW-1:0] in_addr,
  output      logic          cur_valid,        // R2: the request's word, hazards forwarded
  output      logic [AW-1:0] cur_addr,
  output      logic [W-1:0]  cur,
  input  wire logic [W-1:0]  nxt,              // written to cur_addr at the end of R2
  // Host port: h_take says the request is taken this cycle; reads answer two cycles later.
  input  wire logic          h_valid,
  input  wire logic          h_write,
  input  wire logic [AW-1:0] h_addr,
  input  wire logic [W-1:0]  h_wdata,
  output      logic          h_take,
  output      logic          h_rsp_valid,
  output      logic [W-1:0]  h_rsp_data
);

  logic          v1, v2, w1v, w2v, hr1, hr2;
  logic [AW-1:0] a1, a2, w1a, w2a, init_addr;
  logic [W-1:0]  w1d, w2d, rd_data;
  logic          wr_en;
  logic [AW-1:0] wr_addr;
  logic [W-1:0]  wr_data;

  // A host read needs the read port (no request this cycle), a host write an empty pipeline.
  assign h_take = h_valid && !init_busy && !in_valid && (!h_write || (!v1 && !v2));

  always_comb begin
    wr_en = init_busy || v2 || (h_take && h_write);
    wr_addr = init_busy ? init_addr : v2 ? a2 : h_addr;
    wr_data = init_busy ? '0 : v2 ? nxt : h_wdata;
  end

  sched_sdp_ram #(.WIDTH(W), .ADDR_W(AW)) ram (.clk, .wr_en, .wr_addr, .wr_data, .rd_en(1'b1),
    .rd_addr(in_valid ? in_addr : h_addr), .rd_data);

  // The read at the end of R0 missed the writes of the two requests ahead (written at the end of the
  // two cycles before this one's R2): take the newer of them when the address matches.
  assign cur_valid = v2;
  assign cur_addr = a2;
  assign cur = (w1v && w1a == a2) ? w1d : (w2v && w2a == a2) ? w2d : rd_data;
  assign h_rsp_data = rd_data;
  assign h_rsp_valid = hr2;

  always_ff @(posedge clk) begin
    v1 <= in_valid;
    a1 <= in_addr;
    v2 <= v1;
    a2 <= a1;
    hr1 <= h_take && !h_write;
    hr2 <= hr1 || (h_take && h_write);   // a write is answered after one cycle, a read after two
    w1v <= v2;
    w1a <= a2;
    w1d <= nxt;
    w2v <= w1v;
    w2a <= w1a;
    w2d <= w1d;
    if (init_busy) begin
      init_addr <= init_addr + AW'(1);
      if (&init_addr) init_busy <= 1'b0;
    end
    if (rst) begin
      v1 <= 1'b0;
      v2 <= 1'b0;
      hr1 <= 1'b0;
      hr2 <= 1'b0;
      w1v <= 1'b0;
      w2v <= 1'b0;
      init_busy <= 1'b1;
      init_addr <= '0;
    end
  end

endmodule

`default_nettype wire
