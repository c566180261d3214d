// AXI4 write master: writes `count` consecutive 256-bit beats of the input stream to `addr`, in bursts
// of BURST_BEATS. Burst addresses are known up front, so AW runs ahead of W; W is the stream through a
// skid buffer, so s_ready and wvalid/wdata are registers: no combinational path from wready to s_ready.
`default_nettype none

module sched_axi_wr #(
  parameter int ADDR_W      = 64,  // AXI address width
  parameter int DATA_W      = 256, // AXI data width = one record
  parameter int BURST_BEATS = 16   // beats per burst; buffers aligned to BURST_BEATS * DATA_W / 8
) (
  input  wire logic              clk,
  input  wire logic              rst,

  input  wire logic              cmd_valid,   // start a transfer (only while idle)
  input  wire logic [ADDR_W-1:0] cmd_addr,
  input  wire logic [31:0]       cmd_count,   // beats; 0 is a no-op
  output      logic              idle,        // every burst of the last command acknowledged (B)
  output      logic              resp_err,    // registered pulse: a B came with BRESP != OKAY

  input  wire logic              s_valid,
  output      logic              s_ready,
  input  wire logic [DATA_W-1:0] s_data,

  output      logic [ADDR_W-1:0] m_axi_awaddr,
  output      logic [7:0]        m_axi_awlen,
  output      logic [2:0]        m_axi_awsize,
  output      logic [1:0]        m_axi_awburst,
  output      logic              m_axi_awvalid,
  input  wire logic              m_axi_awready,
  output      logic [DATA_W-1:0] m_axi_wdata,
  output      logic [DATA_W/8-1:0] m_axi_wstrb,
  output      logic              m_axi_wlast,
  output      logic              m_axi_wvalid,
  input  wire logic              m_axi_wready,
  input  wire logic [1:0]        m_axi_bresp,  // != OKAY: resp_err
  input  wire logic              m_axi_bvalid,
  output      logic              m_axi_bready
);

  localparam int BYTES = DATA_W / 8;

  initial begin
    if (DATA_W != 256) $error("sched_axi_wr: records are 256-bit beats");
    if (BURST_BEATS < 1 || BURST_BEATS > 256) $error("sched_axi_wr: BURST_BEATS must be 1..256");
  end

  logic [ADDR_W-1:0] aw_addr_reg, aw_addr_next;
  logic [31:0]       aw_left_reg, aw_left_next;  // beats whose burst is not yet requested
  logic [31:0]       w_left_reg, w_left_next;    // beats not yet written
  logic [7:0]        w_beat_reg, w_beat_next;    // beat index within the current burst
  logic              w_one_reg, w_one_next;      // w_left_reg == 1: the last beat (keeps wlast shallow)
  logic [31:0]       b_left_reg, b_left_next;    // bursts not yet acknowledged
  logic [7:0]        aw_len;
  logic              err_reg;
  logic              w_skid_valid, w_skid_ready, w_skid_busy;

  // verilator lint_off UNUSED
  logic unused_w;  // the skid's busy: idle counts acknowledged bursts
  // verilator lint_on UNUSED
  assign unused_w = w_skid_busy;

  sched_skid #(.WIDTH(DATA_W)) w_skid (
    .clk(clk), .rst(rst),
    .s_valid(s_valid), .s_ready(s_ready), .s_data(s_data),
    .m_valid(w_skid_valid), .m_ready(w_skid_ready), .m_data(m_axi_wdata), .busy(w_skid_busy)
  );

  // Idle is a function of registers only, so a command may depend on it combinationally.
  assign idle = b_left_reg == 0;
  assign resp_err = err_reg;

  always_comb begin
    aw_len = (aw_left_reg >= BURST_BEATS) ? 8'(BURST_BEATS - 1) : 8'(aw_left_reg - 1);
    m_axi_awaddr = aw_addr_reg;
    m_axi_awlen = aw_len;
    m_axi_awsize = 3'($clog2(BYTES));
    m_axi_awburst = 2'b01;  // INCR
    m_axi_awvalid = aw_left_reg != 0;

    m_axi_wvalid = w_skid_valid && w_left_reg != 0;
    w_skid_ready = m_axi_wready && w_left_reg != 0;
    m_axi_wstrb = '1;
    m_axi_wlast = (w_beat_reg == 8'(BURST_BEATS - 1)) || w_one_reg;
    m_axi_bready = 1'b1;

    aw_addr_next = aw_addr_reg;
    aw_left_next = aw_left_reg;
    w_left_next = w_left_reg;
    w_beat_next = w_beat_reg;
    w_one_next = w_one_reg;
    b_left_next = b_left_reg;
    if (m_axi_awvalid && m_axi_awready) begin
      aw_addr_next = aw_addr_reg + ADDR_W'(BURST_BEATS * BYTES);
      // = aw_left - (aw_len + 1), with the compare and the subtraction side by side (one carry chain deep)
      aw_left_next = (aw_left_reg >= BURST_BEATS) ? aw_left_reg - 32'(BURST_BEATS) : 32'd0;
    end
    if (m_axi_wvalid && m_axi_wready) begin
      w_left_next = w_left_reg - 32'd1;
      w_one_next = w_left_reg == 32'd2;
      w_beat_next = m_axi_wlast ? 8'd0 : w_beat_reg + 8'd1;
    end
    if (m_axi_bvalid) b_left_next = b_left_reg - 32'd1;
    if (cmd_valid && idle) begin
      aw_addr_next = cmd_addr;
      aw_left_next = cmd_count;
      w_left_next = cmd_count;
      w_one_next = cmd_count == 32'd1;
      w_beat_next = 8'd0;
      b_left_next = (cmd_count + 32'(BURST_BEATS - 1)) / 32'(BURST_BEATS);
    end
  end

  always_ff @(posedge clk) begin
    aw_addr_reg <= aw_addr_next;
    aw_left_reg <= aw_left_next;
    w_left_reg <= w_left_next;
    w_beat_reg <= w_beat_next;
    w_one_reg <= w_one_next;
    b_left_reg <= b_left_next;
    err_reg <= m_axi_bvalid && m_axi_bready && m_axi_bresp != 2'b00;
    if (rst) begin
      aw_left_reg <= 32'd0;
      w_left_reg <= 32'd0;
      w_beat_reg <= 8'd0;
      w_one_reg <= 1'b0;
      b_left_reg <= 32'd0;
    end
  end

endmodule

`default_nettype wire
