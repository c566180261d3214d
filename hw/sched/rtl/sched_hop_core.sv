// The packet-hop scheduler: applies DESIGN.md's FIFO link contract to one packet-hop per clock, in
// the order the hops arrive. Per-link rate/latency and link_free live in block RAM. See
// hw/README.md "sched_hop_core" for the pipeline and the hazard it forwards around.
`default_nettype none

module sched_hop_core #(
  parameter int LINK_ADDR_W = 8  // log2 of the link-table capacity
) (
  input  wire logic                   clk,
  input  wire logic                   rst,

  // Link-table load port; only while idle (busy low, no hop offered).
  input  wire logic                   cfg_wr_en,
  input  wire logic [LINK_ADDR_W-1:0] cfg_wr_link,
  input  wire logic [63:0]            cfg_wr_rate,     // Q32.32 ps per byte
  input  wire logic [63:0]            cfg_wr_latency,  // ps
  input  wire logic [63:0]            cfg_wr_free,     // initial link_free, ps

  // Hops in: packet of s_bytes reaches link s_link at time s_time.
  input  wire logic                   s_valid,
  output      logic                   s_ready,
  input  wire logic [63:0]            s_time,
  input  wire logic [31:0]            s_bytes,
  input  wire logic [LINK_ADDR_W-1:0] s_link,
  input  wire logic [63:0]            s_tag,

  // Completions out, in input order.
  output      logic                   m_valid,
  input  wire logic                   m_ready,
  output      logic [63:0]            m_depart,
  output      logic [63:0]            m_arrive,
  output      logic [63:0]            m_tag,
  output      logic [LINK_ADDR_W-1:0] m_link,
  output      logic [31:0]            m_bytes,

  output      logic                   busy        // a hop is somewhere in the pipeline
);

  initial begin
    if (LINK_ADDR_W < 1 || LINK_ADDR_W > 16) $error("sched_hop_core: LINK_ADDR_W must be 1..16");
  end

  // Every stage advances together when the output register can take a word.
  logic en;

  // --- registers: stage 1 (cfg read), 2 (multiply), 3 (round), 4 (link update), 5 (depart), 6 (out)
  logic                   s1_valid_reg, s2_valid_reg, s3_valid_reg, s4_valid_reg, s5_valid_reg, s6_valid_reg;
  logic [63:0]            s1_time_reg, s2_time_reg, s3_time_reg, s4_time_reg;
  logic [31:0]            s1_bytes_reg, s2_bytes_reg, s3_bytes_reg, s4_bytes_reg, s5_bytes_reg, s6_bytes_reg;
  logic [LINK_ADDR_W-1:0] s1_link_reg, s2_link_reg, s3_link_reg, s4_link_reg, s5_link_reg, s6_link_reg;
  logic [63:0]            s1_tag_reg, s2_tag_reg, s3_tag_reg, s4_tag_reg, s5_tag_reg, s6_tag_reg;
  logic [95:0]            s2_prod_reg;
  logic [63:0]            s2_lat_reg, s3_lat_reg, s4_lat_reg, s5_lat_reg;
  logic [63:0]            s3_ser_reg, s4_ser_reg;
  logic [63:0]            s5_depart_reg, s5_free_reg, s6_depart_reg, s6_arrive_reg;
  // The word stage 4 wrote at the edge its successor read the RAM: the one write the read missed.
  logic                   fwd_valid_reg;
  logic [LINK_ADDR_W-1:0] fwd_link_reg;
  logic [63:0]            fwd_free_reg;

  // --- RAMs
  logic [127:0] cfg_rd_data;   // {latency, rate}
  logic [63:0]  free_rd_data;
  logic         free_wr_en;
  logic [LINK_ADDR_W-1:0] free_wr_addr;
  logic [63:0]  free_wr_data;

  sched_sdp_ram #(.WIDTH(128), .ADDR_W(LINK_ADDR_W)) cfg_ram (
    .clk(clk),
    .wr_en(cfg_wr_en), .wr_addr(cfg_wr_link), .wr_data({cfg_wr_latency, cfg_wr_rate}),
    .rd_en(en), .rd_addr(s_link), .rd_data(cfg_rd_data)
  );

  sched_sdp_ram #(.WIDTH(64), .ADDR_W(LINK_ADDR_W)) free_ram (
    .clk(clk),
    .wr_en(free_wr_en), .wr_addr(free_wr_addr), .wr_data(free_wr_data),
    .rd_en(en), .rd_addr(s3_link_reg), .rd_data(free_rd_data)
  );

  // --- combinational: stage 4's link update, the one loop-carried computation
  logic [63:0] s4_free_cur, s4_depart, s4_free_new;

  always_comb begin
    en = !s6_valid_reg || m_ready;
    s_ready = en;

    s4_free_cur = (fwd_valid_reg && fwd_link_reg == s4_link_reg) ? fwd_free_reg : free_rd_data;
    s4_depart = (s4_time_reg > s4_free_cur) ? s4_time_reg : s4_free_cur;
    s4_free_new = s4_depart + s4_ser_reg;

    free_wr_en = cfg_wr_en || (en && s4_valid_reg);
    free_wr_addr = cfg_wr_en ? cfg_wr_link : s4_link_reg;
    free_wr_data = cfg_wr_en ? cfg_wr_free : s4_free_new;

    m_valid = s6_valid_reg;
    m_depart = s6_depart_reg;
    m_arrive = s6_arrive_reg;
    m_tag = s6_tag_reg;
    m_link = s6_link_reg;
    m_bytes = s6_bytes_reg;
    busy = s1_valid_reg || s2_valid_reg || s3_valid_reg || s4_valid_reg || s5_valid_reg || s6_valid_reg;
  end

  // --- sequential
  always_ff @(posedge clk) begin
    if (en) begin
      // stage 1: the cfg RAM word of s_link is read at this same edge
      s1_valid_reg <= s_valid;
      s1_time_reg <= s_time;
      s1_bytes_reg <= s_bytes;
      s1_link_reg <= s_link;
      s1_tag_reg <= s_tag;
      // stage 2: bytes * rate, the 96-bit product
      s2_valid_reg <= s1_valid_reg;
      s2_time_reg <= s1_time_reg;
      s2_bytes_reg <= s1_bytes_reg;
      s2_link_reg <= s1_link_reg;
      s2_tag_reg <= s1_tag_reg;
      s2_prod_reg <= {32'd0, s1_bytes_reg} * {32'd0, cfg_rd_data[63:0]};
      s2_lat_reg <= cfg_rd_data[127:64];
      // stage 3: ser = ceil(prod / 2^32); the free RAM word of s3_link is read at the next edge
      s3_valid_reg <= s2_valid_reg;
      s3_time_reg <= s2_time_reg;
      s3_bytes_reg <= s2_bytes_reg;
      s3_link_reg <= s2_link_reg;
      s3_tag_reg <= s2_tag_reg;
      s3_lat_reg <= s2_lat_reg;
      s3_ser_reg <= s2_prod_reg[95:32] + {63'd0, |s2_prod_reg[31:0]};
      // stage 4: holds the hop while the free RAM word arrives
      s4_valid_reg <= s3_valid_reg;
      s4_time_reg <= s3_time_reg;
      s4_bytes_reg <= s3_bytes_reg;
      s4_link_reg <= s3_link_reg;
      s4_tag_reg <= s3_tag_reg;
      s4_lat_reg <= s3_lat_reg;
      s4_ser_reg <= s3_ser_reg;
      fwd_valid_reg <= s4_valid_reg;
      fwd_link_reg <= s4_link_reg;
      fwd_free_reg <= s4_free_new;
      // stage 5: departure and the new link_free
      s5_valid_reg <= s4_valid_reg;
      s5_bytes_reg <= s4_bytes_reg;
      s5_link_reg <= s4_link_reg;
      s5_tag_reg <= s4_tag_reg;
      s5_lat_reg <= s4_lat_reg;
      s5_depart_reg <= s4_depart;
      s5_free_reg <= s4_free_new;
      // stage 6: far-end arrival = link_free + latency
      s6_valid_reg <= s5_valid_reg;
      s6_bytes_reg <= s5_bytes_reg;
      s6_link_reg <= s5_link_reg;
      s6_tag_reg <= s5_tag_reg;
      s6_depart_reg <= s5_depart_reg;
      s6_arrive_reg <= s5_free_reg + s5_lat_reg;
    end

    if (rst) begin
      s1_valid_reg <= 1'b0;
      s2_valid_reg <= 1'b0;
      s3_valid_reg <= 1'b0;
      s4_valid_reg <= 1'b0;
      s5_valid_reg <= 1'b0;
      s6_valid_reg <= 1'b0;
      fwd_valid_reg <= 1'b0;
    end
  end

endmodule

`default_nettype wire
