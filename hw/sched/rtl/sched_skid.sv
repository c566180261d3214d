// Two-entry skid buffer for a valid/ready stream: s_ready, m_valid and m_data are registers, so no
// combinational path crosses it in either direction, and it passes one word per clock while m_ready
// stays high. A word offered while the output register is stalled waits in the skid register.
`default_nettype none

module sched_skid #(
  parameter int WIDTH = 64  // payload bits
) (
  input  wire logic             clk,
  input  wire logic             rst,
  input  wire logic             s_valid,
  output      logic             s_ready,   // = skid register empty
  input  wire logic [WIDTH-1:0] s_data,
  output      logic             m_valid,
  input  wire logic             m_ready,
  output      logic [WIDTH-1:0] m_data,
  output      logic             busy       // a word is held
);

  initial begin
    if (WIDTH < 1) $error("sched_skid: WIDTH must be at least 1");
  end

  logic             out_valid_reg;
  logic             ready_reg;   // the skid register is empty (kept positive: it drives clock enables)
  logic [WIDTH-1:0] out_data_reg, skid_data_reg;

  always_comb begin
    s_ready = ready_reg;
    m_valid = out_valid_reg;
    m_data = out_data_reg;
    busy = out_valid_reg || !ready_reg;
  end

  always_ff @(posedge clk) begin
    if (!out_valid_reg || m_ready) begin
      // The output register empties (or is empty): refill it from the skid first, else from the input.
      if (!ready_reg) begin
        out_data_reg <= skid_data_reg;
        ready_reg <= 1'b1;
      end else begin
        out_valid_reg <= s_valid;
        out_data_reg <= s_data;
      end
    end else if (s_valid && ready_reg) begin
      // The output is stalled: park the accepted word.
      ready_reg <= 1'b0;
      skid_data_reg <= s_data;
    end
    if (rst) begin
      out_valid_reg <= 1'b0;
      ready_reg <= 1'b1;
    end
  end

endmodule

`default_nettype wire
