// AXI4 read master: reads `count` consecutive 256-bit beats from `addr` in bursts of BURST_BEATS and
// streams them out in order through a skid buffer, so rready and the stream's valid/data are registers:
// no combinational path from the stream's m_ready to rready nor from R to the stream.
`default_nettype none

module sched_axi_rd #(
  parameter int ADDR_W      = 64,  // AXI address width
  parameter int DATA_W      = 256, // AXI data width = one record
  parameter int BURST_BEATS = 16   // beats per burst; buffers aligned to BURST_BEATS * DATA_W / 8
) (
  input  wire logic              clk,
  input  wire logic              rst,

  input  wire logic              cmd_valid,   // start a transfer (only while idle)
  input  wire logic [ADDR_W-1:0] cmd_addr,
  input  wire logic [31:0]       cmd_count,   // beats; 0 is a no-op
  output      logic              idle,        // every beat of the last command delivered
  output      logic              resp_err,    // registered pulse: a beat came with RRESP != OKAY

  output      logic              m_valid,
  input  wire logic              m_ready,
  output      logic [DATA_W-1:0] m_data,

  output      logic [ADDR_W-1:0] m_axi_araddr,
  output      logic [7:0]        m_axi_arlen,
  output      logic [2:0]        m_axi_arsize,
  output      logic [1:0]        m_axi_arburst,
  output      logic              m_axi_arvalid,
  input  wire logic              m_axi_arready,
  input  wire logic [DATA_W-1:0] m_axi_rdata,
  input  wire logic [1:0]        m_axi_rresp,  // != OKAY: resp_err
  input  wire logic              m_axi_rlast,  // bursts are counted in beats instead
  input  wire logic              m_axi_rvalid,
  output      logic              m_axi_rready
);

  localparam int BYTES = DATA_W / 8;

  initial begin
    if (DATA_W != 256) $error("sched_axi_rd: records are 256-bit beats");
    if (BURST_BEATS < 1 || BURST_BEATS > 256) $error("sched_axi_rd: BURST_BEATS must be 1..256");
  end

  logic [ADDR_W-1:0] ar_addr_reg, ar_addr_next;
  logic [31:0]       ar_left_reg, ar_left_next;   // beats not yet requested
  logic [31:0]       r_left_reg, r_left_next;     // beats not yet delivered
  logic [7:0]        ar_len;
  logic              err_reg;
  logic              r_skid_busy;

  // verilator lint_off UNUSED
  logic unused_r;  // rlast: see the port comment; the skid's busy: idle counts delivered beats
  // verilator lint_on UNUSED
  assign unused_r = m_axi_rlast ^ r_skid_busy;

  sched_skid #(.WIDTH(DATA_W)) r_skid (
    .clk(clk), .rst(rst),
    .s_valid(m_axi_rvalid), .s_ready(m_axi_rready), .s_data(m_axi_rdata),
    .m_valid(m_valid), .m_ready(m_ready), .m_data(m_data), .busy(r_skid_busy)
  );

  // Idle is a function of registers only, so a command may depend on it combinationally.
  assign idle = r_left_reg == 0;
  assign resp_err = err_reg;

  always_comb begin
    ar_len = (ar_left_reg >= BURST_BEATS) ? 8'(BURST_BEATS - 1) : 8'(ar_left_reg - 1);
    m_axi_araddr = ar_addr_reg;
    m_axi_arlen = ar_len;
    m_axi_arsize = 3'($clog2(BYTES));
    m_axi_arburst = 2'b01;  // INCR
    m_axi_arvalid = ar_left_reg != 0;

    ar_addr_next = ar_addr_reg;
    ar_left_next = ar_left_reg;
    r_left_next = r_left_reg;
    if (m_axi_arvalid && m_axi_arready) begin
      ar_addr_next = ar_addr_reg + ADDR_W'(BURST_BEATS * BYTES);
      // = ar_left - (ar_len + 1), with the compare and the subtraction side by side (one carry chain deep)
      ar_left_next = (ar_left_reg >= BURST_BEATS) ? ar_left_reg - 32'(BURST_BEATS) : 32'd0;
    end
    if (m_valid && m_ready) r_left_next = r_left_reg - 32'd1;
    if (cmd_valid && idle) begin
      ar_addr_next = cmd_addr;
      ar_left_next = cmd_count;
      r_left_next = cmd_count;
    end
  end

  always_ff @(posedge clk) begin
    ar_addr_reg <= ar_addr_next;
    ar_left_reg <= ar_left_next;
    r_left_reg <= r_left_next;
    err_reg <= m_axi_rvalid && m_axi_rready && m_axi_rresp != 2'b00;
    if (rst) begin
      ar_left_reg <= 32'd0;
      r_left_reg <= 32'd0;
    end
  end

endmodule

`default_nettype wire
