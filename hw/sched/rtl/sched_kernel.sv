// Vitis RTL kernel top of the fabemu message scheduler: AXI4-Lite control (ap_ctrl_hs), m00_axi reads
// the link table and the hop descriptors, m01_axi writes one completion per descriptor. A run: load
// num_links link-table entries (0: keep the link state of the previous run), then stream num_desc
// descriptors through sched_hop_core, one per clock when memory keeps up, then ap_done.
`default_nettype none

module sched_kernel #(
  parameter int C_S_AXI_CONTROL_ADDR_WIDTH = 12,   // Vitis control address width
  parameter int C_M_AXI_ADDR_WIDTH         = 64,   // device address width
  parameter int C_M_AXI_DATA_WIDTH         = 256,  // one record per beat
  parameter int LINK_ADDR_W                = 8     // log2 of the link-table capacity
) (
  input  wire logic        ap_clk,
  input  wire logic        ap_rst_n,
  /* verilator lint_off SYMRSVDWORD */  // Vitis names the kernel's interrupt port so
  output      logic        interrupt,
  /* verilator lint_on SYMRSVDWORD */

  input  wire logic [C_S_AXI_CONTROL_ADDR_WIDTH-1:0] s_axi_control_awaddr,
  input  wire logic        s_axi_control_awvalid,
  output      logic        s_axi_control_awready,
  input  wire logic [31:0] s_axi_control_wdata,
  input  wire logic [3:0]  s_axi_control_wstrb,
  input  wire logic        s_axi_control_wvalid,
  output      logic        s_axi_control_wready,
  output      logic [1:0]  s_axi_control_bresp,
  output      logic        s_axi_control_bvalid,
  input  wire logic        s_axi_control_bready,
  input  wire logic [C_S_AXI_CONTROL_ADDR_WIDTH-1:0] s_axi_control_araddr,
  input  wire logic        s_axi_control_arvalid,
  output      logic        s_axi_control_arready,
  output      logic [31:0] s_axi_control_rdata,
  output      logic [1:0]  s_axi_control_rresp,
  output      logic        s_axi_control_rvalid,
  input  wire logic        s_axi_control_rready,

  // m00: reads (its write channels are tied off)
  output      logic [C_M_AXI_ADDR_WIDTH-1:0] m00_axi_araddr,
  output      logic [7:0]  m00_axi_arlen,
  output      logic [2:0]  m00_axi_arsize,
  output      logic [1:0]  m00_axi_arburst,
  output      logic        m00_axi_arvalid,
  input  wire logic        m00_axi_arready,
  input  wire logic [C_M_AXI_DATA_WIDTH-1:0] m00_axi_rdata,
  input  wire logic [1:0]  m00_axi_rresp,
  input  wire logic        m00_axi_rlast,
  input  wire logic        m00_axi_rvalid,
  output      logic        m00_axi_rready,
  output      logic [C_M_AXI_ADDR_WIDTH-1:0] m00_axi_awaddr,
  output      logic [7:0]  m00_axi_awlen,
  output      logic [2:0]  m00_axi_awsize,
  output      logic [1:0]  m00_axi_awburst,
  output      logic        m00_axi_awvalid,
  input  wire logic        m00_axi_awready,
  output      logic [C_M_AXI_DATA_WIDTH-1:0] m00_axi_wdata,
  output      logic [C_M_AXI_DATA_WIDTH/8-1:0] m00_axi_wstrb,
  output      logic        m00_axi_wlast,
  output      logic        m00_axi_wvalid,
  input  wire logic        m00_axi_wready,
  input  wire logic [1:0]  m00_axi_bresp,
  input  wire logic        m00_axi_bvalid,
  output      logic        m00_axi_bready,

  // m01: writes (its read channels are tied off)
  output      logic [C_M_AXI_ADDR_WIDTH-1:0] m01_axi_awaddr,
  output      logic [7:0]  m01_axi_awlen,
  output      logic [2:0]  m01_axi_awsize,
  output      logic [1:0]  m01_axi_awburst,
  output      logic        m01_axi_awvalid,
  input  wire logic        m01_axi_awready,
  output      logic [C_M_AXI_DATA_WIDTH-1:0] m01_axi_wdata,
  output      logic [C_M_AXI_DATA_WIDTH/8-1:0] m01_axi_wstrb,
  output      logic        m01_axi_wlast,
  output      logic        m01_axi_wvalid,
  input  wire logic        m01_axi_wready,
  input  wire logic [1:0]  m01_axi_bresp,
  input  wire logic        m01_axi_bvalid,
  output      logic        m01_axi_bready,
  output      logic [C_M_AXI_ADDR_WIDTH-1:0] m01_axi_araddr,
  output      logic [7:0]  m01_axi_arlen,
  output      logic [2:0]  m01_axi_arsize,
  output      logic [1:0]  m01_axi_arburst,
  output      logic        m01_axi_arvalid,
  input  wire logic        m01_axi_arready,
  input  wire logic [C_M_AXI_DATA_WIDTH-1:0] m01_axi_rdata,
  input  wire logic [1:0]  m01_axi_rresp,
  input  wire logic        m01_axi_rlast,
  input  wire logic        m01_axi_rvalid,
  output      logic        m01_axi_rready
);

  initial begin
    if (C_M_AXI_DATA_WIDTH != fabemu_sched_pkg::RECORD_BITS) $error("sched_kernel: C_M_AXI_DATA_WIDTH must be fabemu_sched_pkg::RECORD_BITS");
    if (LINK_ADDR_W < 1 || LINK_ADDR_W > 16) $error("sched_kernel: LINK_ADDR_W must be 1..16");
  end

  typedef enum logic [1:0] {ST_IDLE, ST_LOAD, ST_RUN, ST_DONE} state_t;

  logic rst;
  logic ap_start, ap_done, ap_ready, ap_idle;
  logic [63:0] links_addr, desc_addr, cmpl_addr;
  logic [31:0] num_links, num_desc;

  state_t      state_reg, state_next;
  logic [63:0] cycles_reg, cycles_next;
  logic [LINK_ADDR_W-1:0] load_link_reg, load_link_next;
  logic [1:0]  status_reg, status_next;   // STATUS_WR_ERR, STATUS_RD_ERR: sticky for the run
  logic        rd_resp_err, wr_resp_err;

  logic rd_cmd_valid, rd_idle, rd_valid, rd_ready;
  logic [63:0] rd_cmd_addr;
  logic [31:0] rd_cmd_count;
  logic [fabemu_sched_pkg::RECORD_BITS-1:0] rd_data;
  logic wr_cmd_valid, wr_idle;

  logic core_s_valid, core_s_ready, core_m_valid, core_m_ready, core_busy;
  logic [63:0] core_depart, core_arrive, core_tag;
  logic [LINK_ADDR_W-1:0] core_link;
  logic [31:0] core_bytes;
  logic cfg_wr_en;
  logic [fabemu_sched_pkg::RECORD_BITS-1:0] cmpl_word;

  // The upper link-id bits of a record and the unused channels of m00/m01 are ignored by design.
  // verilator lint_off UNUSED
  logic unused_tieoff;
  // verilator lint_on UNUSED
  assign unused_tieoff = ^{m00_axi_awready, m00_axi_wready, m00_axi_bresp, m00_axi_bvalid,
                           m01_axi_arready, m01_axi_rdata, m01_axi_rresp, m01_axi_rlast, m01_axi_rvalid,
                           rd_data[fabemu_sched_pkg::DESC_LINK_LSB+LINK_ADDR_W +: 32-LINK_ADDR_W], rd_data[255:192]};

  always_comb begin
    rst = !ap_rst_n;
    ap_idle = state_reg == ST_IDLE;
    ap_done = state_reg == ST_DONE;
    ap_ready = ap_done;

    state_next = state_reg;
    cycles_next = (state_reg == ST_IDLE) ? cycles_reg : cycles_reg + 64'd1;
    load_link_next = load_link_reg;
    status_next = status_reg;
    status_next[fabemu_sched_pkg::STATUS_RD_ERR] = status_reg[fabemu_sched_pkg::STATUS_RD_ERR] || rd_resp_err;
    status_next[fabemu_sched_pkg::STATUS_WR_ERR] = status_reg[fabemu_sched_pkg::STATUS_WR_ERR] || wr_resp_err;
    rd_cmd_valid = 1'b0;
    rd_cmd_addr = desc_addr;
    rd_cmd_count = num_desc;
    wr_cmd_valid = 1'b0;

    case (state_reg)
      ST_IDLE: if (ap_start) begin
        cycles_next = 64'd1;
        load_link_next = '0;
        status_next = '0;
        rd_cmd_valid = 1'b1;
        if (num_links != 0) begin
          rd_cmd_addr = links_addr;
          rd_cmd_count = num_links;
          state_next = ST_LOAD;
        end else begin
          wr_cmd_valid = 1'b1;
          state_next = ST_RUN;
        end
      end
      ST_LOAD: begin
        if (rd_valid) load_link_next = load_link_reg + 1'b1;
        if (rd_idle) begin
          rd_cmd_valid = 1'b1;
          wr_cmd_valid = 1'b1;
          state_next = ST_RUN;
        end
      end
      ST_RUN: if (rd_idle && wr_idle && !core_busy) state_next = ST_DONE;
      ST_DONE: state_next = ST_IDLE;
      default: state_next = ST_IDLE;
    endcase

    cfg_wr_en = state_reg == ST_LOAD && rd_valid;
    cmpl_word = '0;
    cmpl_word[fabemu_sched_pkg::CMPL_DEPART_LSB +: 64] = core_depart;
    cmpl_word[fabemu_sched_pkg::CMPL_ARRIVE_LSB +: 64] = core_arrive;
    cmpl_word[fabemu_sched_pkg::CMPL_TAG_LSB +: 64] = core_tag;
    cmpl_word[fabemu_sched_pkg::CMPL_LINK_LSB +: 32] = 32'(core_link);
    cmpl_word[fabemu_sched_pkg::CMPL_BYTES_LSB +: 32] = core_bytes;
    core_s_valid = state_reg == ST_RUN && rd_valid;
    rd_ready = state_reg == ST_LOAD || (state_reg == ST_RUN && core_s_ready);

    // m00 write channels and m01 read channels: idle
    m00_axi_awaddr = '0;
    m00_axi_awlen = '0;
    m00_axi_awsize = '0;
    m00_axi_awburst = '0;
    m00_axi_awvalid = 1'b0;
    m00_axi_wdata = '0;
    m00_axi_wstrb = '0;
    m00_axi_wlast = 1'b0;
    m00_axi_wvalid = 1'b0;
    m00_axi_bready = 1'b1;
    m01_axi_araddr = '0;
    m01_axi_arlen = '0;
    m01_axi_arsize = '0;
    m01_axi_arburst = '0;
    m01_axi_arvalid = 1'b0;
    m01_axi_rready = 1'b1;
  end

  always_ff @(posedge ap_clk) begin
    state_reg <= state_next;
    cycles_reg <= cycles_next;
    load_link_reg <= load_link_next;
    status_reg <= status_next;
    if (rst) begin
      state_reg <= ST_IDLE;
      cycles_reg <= 64'd0;
      status_reg <= '0;
    end
  end

  sched_axil_ctrl #(.ADDR_W(C_S_AXI_CONTROL_ADDR_WIDTH), .LINK_CAP(2**LINK_ADDR_W)) ctrl (
    .clk(ap_clk), .rst(rst),
    .s_axi_awaddr(s_axi_control_awaddr), .s_axi_awvalid(s_axi_control_awvalid), .s_axi_awready(s_axi_control_awready),
    .s_axi_wdata(s_axi_control_wdata), .s_axi_wstrb(s_axi_control_wstrb), .s_axi_wvalid(s_axi_control_wvalid),
    .s_axi_wready(s_axi_control_wready), .s_axi_bresp(s_axi_control_bresp), .s_axi_bvalid(s_axi_control_bvalid),
    .s_axi_bready(s_axi_control_bready), .s_axi_araddr(s_axi_control_araddr), .s_axi_arvalid(s_axi_control_arvalid),
    .s_axi_arready(s_axi_control_arready), .s_axi_rdata(s_axi_control_rdata), .s_axi_rresp(s_axi_control_rresp),
    .s_axi_rvalid(s_axi_control_rvalid), .s_axi_rready(s_axi_control_rready),
    .ap_start(ap_start), .ap_done(ap_done), .ap_ready(ap_ready), .ap_idle(ap_idle), .interrupt(interrupt),
    .links_addr(links_addr), .desc_addr(desc_addr), .cmpl_addr(cmpl_addr),
    .num_links(num_links), .num_desc(num_desc), .cycles(cycles_reg), .status(status_reg)
  );

  sched_axi_rd #(.ADDR_W(C_M_AXI_ADDR_WIDTH), .DATA_W(C_M_AXI_DATA_WIDTH), .BURST_BEATS(fabemu_sched_pkg::BURST_BEATS)) rd (
    .clk(ap_clk), .rst(rst),
    .cmd_valid(rd_cmd_valid), .cmd_addr(rd_cmd_addr), .cmd_count(rd_cmd_count), .idle(rd_idle), .resp_err(rd_resp_err),
    .m_valid(rd_valid), .m_ready(rd_ready), .m_data(rd_data),
    .m_axi_araddr(m00_axi_araddr), .m_axi_arlen(m00_axi_arlen), .m_axi_arsize(m00_axi_arsize),
    .m_axi_arburst(m00_axi_arburst), .m_axi_arvalid(m00_axi_arvalid), .m_axi_arready(m00_axi_arready),
    .m_axi_rdata(m00_axi_rdata), .m_axi_rresp(m00_axi_rresp), .m_axi_rlast(m00_axi_rlast),
    .m_axi_rvalid(m00_axi_rvalid), .m_axi_rready(m00_axi_rready)
  );

  sched_hop_core #(.LINK_ADDR_W(LINK_ADDR_W)) core (
    .clk(ap_clk), .rst(rst),
    .cfg_wr_en(cfg_wr_en), .cfg_wr_link(load_link_reg),
    .cfg_wr_rate(rd_data[fabemu_sched_pkg::LINK_RATE_LSB +: 64]), .cfg_wr_latency(rd_data[fabemu_sched_pkg::LINK_LATENCY_LSB +: 64]),
    .cfg_wr_free(rd_data[fabemu_sched_pkg::LINK_FREE_LSB +: 64]),
    .s_valid(core_s_valid), .s_ready(core_s_ready),
    .s_time(rd_data[fabemu_sched_pkg::DESC_TIME_LSB +: 64]), .s_bytes(rd_data[fabemu_sched_pkg::DESC_BYTES_LSB +: 32]),
    .s_link(rd_data[fabemu_sched_pkg::DESC_LINK_LSB +: LINK_ADDR_W]), .s_tag(rd_data[fabemu_sched_pkg::DESC_TAG_LSB +: 64]),
    .m_valid(core_m_valid), .m_ready(core_m_ready),
    .m_depart(core_depart), .m_arrive(core_arrive), .m_tag(core_tag), .m_link(core_link), .m_bytes(core_bytes),
    .busy(core_busy)
  );

  sched_axi_wr #(.ADDR_W(C_M_AXI_ADDR_WIDTH), .DATA_W(C_M_AXI_DATA_WIDTH), .BURST_BEATS(fabemu_sched_pkg::BURST_BEATS)) wr (
    .clk(ap_clk), .rst(rst),
    .cmd_valid(wr_cmd_valid), .cmd_addr(cmpl_addr), .cmd_count(num_desc), .idle(wr_idle), .resp_err(wr_resp_err),
    .s_valid(core_m_valid), .s_ready(core_m_ready),
    .s_data(cmpl_word),
    .m_axi_awaddr(m01_axi_awaddr), .m_axi_awlen(m01_axi_awlen), .m_axi_awsize(m01_axi_awsize),
    .m_axi_awburst(m01_axi_awburst), .m_axi_awvalid(m01_axi_awvalid), .m_axi_awready(m01_axi_awready),
    .m_axi_wdata(m01_axi_wdata), .m_axi_wstrb(m01_axi_wstrb), .m_axi_wlast(m01_axi_wlast),
    .m_axi_wvalid(m01_axi_wvalid), .m_axi_wready(m01_axi_wready),
    .m_axi_bresp(m01_axi_bresp), .m_axi_bvalid(m01_axi_bvalid), .m_axi_bready(m01_axi_bready)
  );

  // AXI handshake rules on every channel of the three interfaces, both directions (simulation only).
  sched_axi_check #(.W(C_M_AXI_ADDR_WIDTH + 13), .NAME("m00_axi AR")) chk_m00_ar (.clk(ap_clk), .rst(rst),
    .valid(m00_axi_arvalid), .ready(m00_axi_arready), .payload({m00_axi_araddr, m00_axi_arlen, m00_axi_arsize, m00_axi_arburst}));
  sched_axi_check #(.W(C_M_AXI_DATA_WIDTH + 3), .NAME("m00_axi R")) chk_m00_r (.clk(ap_clk), .rst(rst),
    .valid(m00_axi_rvalid), .ready(m00_axi_rready), .payload({m00_axi_rdata, m00_axi_rresp, m00_axi_rlast}));
  sched_axi_check #(.W(C_M_AXI_ADDR_WIDTH + 13), .NAME("m01_axi AW")) chk_m01_aw (.clk(ap_clk), .rst(rst),
    .valid(m01_axi_awvalid), .ready(m01_axi_awready), .payload({m01_axi_awaddr, m01_axi_awlen, m01_axi_awsize, m01_axi_awburst}));
  sched_axi_check #(.W(C_M_AXI_DATA_WIDTH + C_M_AXI_DATA_WIDTH / 8 + 1), .NAME("m01_axi W")) chk_m01_w (.clk(ap_clk), .rst(rst),
    .valid(m01_axi_wvalid), .ready(m01_axi_wready), .payload({m01_axi_wdata, m01_axi_wstrb, m01_axi_wlast}));
  sched_axi_check #(.W(2), .NAME("m01_axi B")) chk_m01_b (.clk(ap_clk), .rst(rst),
    .valid(m01_axi_bvalid), .ready(m01_axi_bready), .payload(m01_axi_bresp));
  sched_axi_check #(.W(C_S_AXI_CONTROL_ADDR_WIDTH), .NAME("s_axi_control AW")) chk_ctl_aw (.clk(ap_clk), .rst(rst),
    .valid(s_axi_control_awvalid), .ready(s_axi_control_awready), .payload(s_axi_control_awaddr));
  sched_axi_check #(.W(36), .NAME("s_axi_control W")) chk_ctl_w (.clk(ap_clk), .rst(rst),
    .valid(s_axi_control_wvalid), .ready(s_axi_control_wready), .payload({s_axi_control_wdata, s_axi_control_wstrb}));
  sched_axi_check #(.W(2), .NAME("s_axi_control B")) chk_ctl_b (.clk(ap_clk), .rst(rst),
    .valid(s_axi_control_bvalid), .ready(s_axi_control_bready), .payload(s_axi_control_bresp));
  sched_axi_check #(.W(C_S_AXI_CONTROL_ADDR_WIDTH), .NAME("s_axi_control AR")) chk_ctl_ar (.clk(ap_clk), .rst(rst),
    .valid(s_axi_control_arvalid), .ready(s_axi_control_arready), .payload(s_axi_control_araddr));
  sched_axi_check #(.W(34), .NAME("s_axi_control R")) chk_ctl_r (.clk(ap_clk), .rst(rst),
    .valid(s_axi_control_rvalid), .ready(s_axi_control_rready), .payload({s_axi_control_rdata, s_axi_control_rresp}));

endmodule

`default_nettype wire
