// Simple dual-port RAM (one write port, one read port) that synthesis maps to block RAM, with the
// block RAM's output register: read latency 2 (address at edge k, data on rd_data after edge k + 1).
// Read-during-write of one address returns the old word: sched_hop_core forwards around it.
`default_nettype none

module sched_sdp_ram #(
  parameter int WIDTH  = 64,  // word width, bits
  parameter int ADDR_W = 8    // log2 of the number of words
) (
  input  wire logic              clk,
  input  wire logic              wr_en,
  input  wire logic [ADDR_W-1:0] wr_addr,
  input  wire logic [WIDTH-1:0]  wr_data,
  input  wire logic              rd_en,    // both read registers hold their value while low
  input  wire logic [ADDR_W-1:0] rd_addr,
  output      logic [WIDTH-1:0]  rd_data
);

  initial begin
    if (WIDTH < 1 || ADDR_W < 1 || ADDR_W > 20) $error("sched_sdp_ram: bad WIDTH/ADDR_W");
  end

  (* ram_style = "block" *) logic [WIDTH-1:0] mem [2**ADDR_W];
  logic [WIDTH-1:0] word_reg;  // the block RAM's read latch

  always_ff @(posedge clk) begin
    if (wr_en) mem[wr_addr] <= wr_data;
    if (rd_en) begin
      word_reg <= mem[rd_addr];
      rd_data <= word_reg;     // the block RAM's output register (DOA_REG/DOB_REG)
    end
  end

endmodule

`default_nettype wire
