// Receive path, latency histogram: per frame that is ours, the arrival time in picoseconds is
// floor(cycle * ps_per_cycle_q32 / 2^32) (sched_rx_mulq, five stages; `cycle` is the first beat's), the
// latency is that minus the fabemu header's tx_time (one stage; a negative latency is counted in
// `early`, not recorded), its emu::LogHistogram bucket (sched_rx_bucket, four stages) is incremented
// in block RAM (sched_rx_rmw: one frame per cycle, increments of one bucket in consecutive cycles
// forwarded). Counts are CW bits and wrap.
`default_nettype none

module sched_rx_lat #(
  parameter int CW = 48                        // bits of a bucket's count
) (
  input  wire logic          clk,
  input  wire logic          rst,
  input  wire logic [63:0]   cfg_ps_per_cycle_q32,
  input  wire logic          in_valid,         // a frame that is ours (registers of the parent)
  input  wire logic [63:0]   in_cycle,
  input  wire logic [63:0]   in_tx_time,
  output      logic          early,            // one cycle per frame whose tx_time is after its arrival
  output      logic          init_busy,
  input  wire logic          h_valid, h_write,
  input  wire logic [12:0]   h_addr,
  input  wire logic [CW-1:0] h_wdata,
  output      logic          h_take, h_rsp_valid,
  output      logic [CW-1:0] h_rsp_data
);

  logic [63:0] arr5, tx5, lat6;
  logic [5:1]  v;
  logic        v6, neg6;
  sched_rx_mulq mul (.clk, .a(in_cycle), .b(cfg_ps_per_cycle_q32), .q(arr5));
  sched_delay #(.W(64), .N(5)) d_tx (.clk, .en(1'b1), .d(in_tx_time), .q(tx5));
  always_ff @(posedge clk) begin
    v <= {v[4:1], in_valid};
    v6 <= v[5];
    {neg6, lat6} <= {1'b0, arr5} - {1'b0, tx5};
    if (rst) begin
      v <= '0;
      v6 <= 1'b0;
    end
  end
  assign early = v6 && neg6;

  logic [12:0] bucket10;
  logic [10:7] vb;
  sched_rx_bucket buck (.clk, .v(lat6), .q(bucket10));
  always_ff @(posedge clk) begin
    vb <= {vb[9:7], v6 && !neg6};
    if (rst) vb <= '0;
  end

  logic          cur_valid;
  logic [12:0]   cur_addr;
  logic [CW-1:0] cur;
  sched_rx_rmw #(.W(CW), .AW(13)) hist (.clk, .rst, .init_busy, .in_valid(vb[10]), .in_addr(bucket10),
    .cur_valid, .cur_addr, .cur, .nxt(cur + CW'(1)), .h_valid, .h_write, .h_addr, .h_wdata, .h_take,
    .h_rsp_valid, .h_rsp_data);
  // verilator lint_off UNUSED
  logic unused;
  // verilator lint_on UNUSED
  assign unused = ^{cur_valid, cur_addr};

endmodule

`default_nettype wire
