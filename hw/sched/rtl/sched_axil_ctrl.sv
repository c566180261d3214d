// AXI4-Lite slave with the Vitis ap_ctrl_hs control register and the kernel's argument registers
// (fabemu_sched_pkg REG_*). One transaction in flight per direction.
`default_nettype none

module sched_axil_ctrl #(
  parameter int ADDR_W   = 12,  // control address width (Vitis: 12)
  parameter int LINK_CAP = 256  // link-table capacity, read back in fabemu_sched_pkg::REG_LINK_CAP
) (
  input  wire logic              clk,
  input  wire logic              rst,

  input  wire logic [ADDR_W-1:0] s_axi_awaddr,
  input  wire logic              s_axi_awvalid,
  output      logic              s_axi_awready,
  input  wire logic [31:0]       s_axi_wdata,
  input  wire logic [3:0]        s_axi_wstrb,
  input  wire logic              s_axi_wvalid,
  output      logic              s_axi_wready,
  output      logic [1:0]        s_axi_bresp,
  output      logic              s_axi_bvalid,
  input  wire logic              s_axi_bready,
  input  wire logic [ADDR_W-1:0] s_axi_araddr,
  input  wire logic              s_axi_arvalid,
  output      logic              s_axi_arready,
  output      logic [31:0]       s_axi_rdata,
  output      logic [1:0]        s_axi_rresp,
  output      logic              s_axi_rvalid,
  input  wire logic              s_axi_rready,

  output      logic              ap_start,    // held until ap_ready
  input  wire logic              ap_done,     // one-cycle pulses from the kernel
  input  wire logic              ap_ready,
  input  wire logic              ap_idle,
  /* verilator lint_off SYMRSVDWORD */  // the Vitis port name
  output      logic              interrupt,
  /* verilator lint_on SYMRSVDWORD */

  output      logic [63:0]       links_addr,
  output      logic [63:0]       desc_addr,
  output      logic [63:0]       cmpl_addr,
  output      logic [31:0]       num_links,
  output      logic [31:0]       num_desc,
  input  wire logic [63:0]       cycles,
  input  wire logic [1:0]        status      // REG_STATUS: fabemu_sched_pkg::STATUS_* bits
);

  logic              start_reg, start_next;
  logic              done_reg, done_next;     // sticky until CTRL is read
  logic              ready_reg, ready_next;   // sticky until CTRL is read
  logic              gie_reg, gie_next;
  logic [1:0]        ier_reg, ier_next;
  logic [1:0]        isr_reg, isr_next;
  logic [63:0]       links_reg, links_next, desc_reg, desc_next, cmpl_reg, cmpl_next;
  logic [31:0]       nlinks_reg, nlinks_next, ndesc_reg, ndesc_next;
  logic              aw_full_reg, aw_full_next, w_full_reg, w_full_next, b_valid_reg, b_valid_next;
  logic [ADDR_W-1:0] aw_addr_reg, aw_addr_next;
  logic [31:0]       w_data_reg, w_data_next;
  logic [3:0]        w_strb_reg, w_strb_next;
  logic              r_valid_reg, r_valid_next;
  logic [31:0]       r_data_reg, r_data_next;
  logic [31:0]       rd_word;
  logic              do_write, do_read;

  // A byte-enabled update of a 32-bit field.
  function automatic logic [31:0] merge(input logic [31:0] old, input logic [31:0] data, input logic [3:0] strb);
    for (int i = 0; i < 4; i++) merge[i*8 +: 8] = strb[i] ? data[i*8 +: 8] : old[i*8 +: 8];
  endfunction

  always_comb begin
    s_axi_awready = !aw_full_reg;
    s_axi_wready = !w_full_reg;
    s_axi_bvalid = b_valid_reg;
    s_axi_bresp = 2'b00;
    s_axi_arready = !r_valid_reg;
    s_axi_rvalid = r_valid_reg;
    s_axi_rdata = r_data_reg;
    s_axi_rresp = 2'b00;
    ap_start = start_reg;
    interrupt = gie_reg && |(isr_reg & ier_reg);
    links_addr = links_reg;
    desc_addr = desc_reg;
    cmpl_addr = cmpl_reg;
    num_links = nlinks_reg;
    num_desc = ndesc_reg;

    start_next = start_reg && !ap_ready;
    done_next = done_reg || ap_done;
    ready_next = ready_reg || ap_ready;
    gie_next = gie_reg;
    ier_next = ier_reg;
    isr_next = isr_reg | {ap_ready && ier_reg[1], ap_done && ier_reg[0]};
    links_next = links_reg;
    desc_next = desc_reg;
    cmpl_next = cmpl_reg;
    nlinks_next = nlinks_reg;
    ndesc_next = ndesc_reg;

    // Write: address and data may come in either order; respond once both are in.
    aw_full_next = aw_full_reg || s_axi_awvalid;
    aw_addr_next = aw_full_reg ? aw_addr_reg : s_axi_awaddr;
    w_full_next = w_full_reg || s_axi_wvalid;
    w_data_next = w_full_reg ? w_data_reg : s_axi_wdata;
    w_strb_next = w_full_reg ? w_strb_reg : s_axi_wstrb;
    b_valid_next = b_valid_reg && !s_axi_bready;
    do_write = aw_full_reg && w_full_reg && !b_valid_reg;
    if (do_write) begin
      aw_full_next = 1'b0;
      w_full_next = 1'b0;
      b_valid_next = 1'b1;
      case (32'(aw_addr_reg))
        fabemu_sched_pkg::REG_CTRL:          if (w_strb_reg[0] && w_data_reg[fabemu_sched_pkg::CTRL_AP_START]) start_next = 1'b1;
        fabemu_sched_pkg::REG_GIE:           if (w_strb_reg[0]) gie_next = w_data_reg[0];
        fabemu_sched_pkg::REG_IER:           if (w_strb_reg[0]) ier_next = w_data_reg[1:0];
        fabemu_sched_pkg::REG_ISR:           if (w_strb_reg[0]) isr_next = isr_next ^ w_data_reg[1:0];
        fabemu_sched_pkg::REG_LINKS_ADDR_LO: links_next[31:0] = merge(links_reg[31:0], w_data_reg, w_strb_reg);
        fabemu_sched_pkg::REG_LINKS_ADDR_HI: links_next[63:32] = merge(links_reg[63:32], w_data_reg, w_strb_reg);
        fabemu_sched_pkg::REG_DESC_ADDR_LO:  desc_next[31:0] = merge(desc_reg[31:0], w_data_reg, w_strb_reg);
        fabemu_sched_pkg::REG_DESC_ADDR_HI:  desc_next[63:32] = merge(desc_reg[63:32], w_data_reg, w_strb_reg);
        fabemu_sched_pkg::REG_CMPL_ADDR_LO:  cmpl_next[31:0] = merge(cmpl_reg[31:0], w_data_reg, w_strb_reg);
        fabemu_sched_pkg::REG_CMPL_ADDR_HI:  cmpl_next[63:32] = merge(cmpl_reg[63:32], w_data_reg, w_strb_reg);
        fabemu_sched_pkg::REG_NUM_LINKS:     nlinks_next = merge(nlinks_reg, w_data_reg, w_strb_reg);
        fabemu_sched_pkg::REG_NUM_DESC:      ndesc_next = merge(ndesc_reg, w_data_reg, w_strb_reg);
        default: ;
      endcase
    end

    // Read: one cycle from AR to R. Reading CTRL clears done and ready (ap_ctrl_hs).
    rd_word = 32'd0;
    case (32'(s_axi_araddr))
      fabemu_sched_pkg::REG_CTRL:          begin
        rd_word[fabemu_sched_pkg::CTRL_AP_START] = start_reg;
        rd_word[fabemu_sched_pkg::CTRL_AP_DONE] = done_reg;
        rd_word[fabemu_sched_pkg::CTRL_AP_IDLE] = ap_idle;
        rd_word[fabemu_sched_pkg::CTRL_AP_READY] = ready_reg;
      end
      fabemu_sched_pkg::REG_GIE:           rd_word = {31'd0, gie_reg};
      fabemu_sched_pkg::REG_IER:           rd_word = {30'd0, ier_reg};
      fabemu_sched_pkg::REG_ISR:           rd_word = {30'd0, isr_reg};
      fabemu_sched_pkg::REG_LINKS_ADDR_LO: rd_word = links_reg[31:0];
      fabemu_sched_pkg::REG_LINKS_ADDR_HI: rd_word = links_reg[63:32];
      fabemu_sched_pkg::REG_DESC_ADDR_LO:  rd_word = desc_reg[31:0];
      fabemu_sched_pkg::REG_DESC_ADDR_HI:  rd_word = desc_reg[63:32];
      fabemu_sched_pkg::REG_CMPL_ADDR_LO:  rd_word = cmpl_reg[31:0];
      fabemu_sched_pkg::REG_CMPL_ADDR_HI:  rd_word = cmpl_reg[63:32];
      fabemu_sched_pkg::REG_NUM_LINKS:     rd_word = nlinks_reg;
      fabemu_sched_pkg::REG_NUM_DESC:      rd_word = ndesc_reg;
      fabemu_sched_pkg::REG_CYCLES_LO:     rd_word = cycles[31:0];
      fabemu_sched_pkg::REG_CYCLES_HI:     rd_word = cycles[63:32];
      fabemu_sched_pkg::REG_LINK_CAP:      rd_word = 32'(LINK_CAP);
      fabemu_sched_pkg::REG_VERSION:       rd_word = 32'(fabemu_sched_pkg::MAP_VERSION);
      fabemu_sched_pkg::REG_STATUS:        rd_word = {30'd0, status};
      default:           rd_word = 32'd0;
    endcase
    do_read = s_axi_arvalid && !r_valid_reg;
    r_valid_next = (r_valid_reg && !s_axi_rready) || do_read;
    r_data_next = do_read ? rd_word : r_data_reg;
    if (do_read && 32'(s_axi_araddr) == fabemu_sched_pkg::REG_CTRL) begin
      done_next = ap_done;
      ready_next = ap_ready;
    end
  end

  always_ff @(posedge clk) begin
    start_reg <= start_next;
    done_reg <= done_next;
    ready_reg <= ready_next;
    gie_reg <= gie_next;
    ier_reg <= ier_next;
    isr_reg <= isr_next;
    links_reg <= links_next;
    desc_reg <= desc_next;
    cmpl_reg <= cmpl_next;
    nlinks_reg <= nlinks_next;
    ndesc_reg <= ndesc_next;
    aw_full_reg <= aw_full_next;
    aw_addr_reg <= aw_addr_next;
    w_full_reg <= w_full_next;
    w_data_reg <= w_data_next;
    w_strb_reg <= w_strb_next;
    b_valid_reg <= b_valid_next;
    r_valid_reg <= r_valid_next;
    r_data_reg <= r_data_next;
    if (rst) begin
      start_reg <= 1'b0;
      done_reg <= 1'b0;
      ready_reg <= 1'b0;
      gie_reg <= 1'b0;
      ier_reg <= 2'b0;
      isr_reg <= 2'b0;
      aw_full_reg <= 1'b0;
      w_full_reg <= 1'b0;
      b_valid_reg <= 1'b0;
      r_valid_reg <= 1'b0;
    end
  end

endmodule

`default_nettype wire
