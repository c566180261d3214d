// The packet-hop scheduler: applies DESIGN.md's FIFO link contract to one packet-hop per clock, in
// the order the hops arrive. Per-link rate/latency and link_free live in block RAM (read latency 2).
// Nine pipeline stages and an output skid buffer; see hw/sched/doc/sched_hop_core.md for the stages,
// the forwarding network around link_free and the loop-carried path.
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

  // Hops in: packet of s_bytes reaches link s_link at time s_time. s_ready is a register.
  input  wire logic                   s_valid,
  output      logic                   s_ready,
  input  wire logic [63:0]            s_time,
  input  wire logic [31:0]            s_bytes,
  input  wire logic [LINK_ADDR_W-1:0] s_link,
  input  wire logic [63:0]            s_tag,

  // Completions out, in input order, from the output skid buffer's registers.
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

  localparam int CMPL_W = 64 + 64 + 64 + LINK_ADDR_W + 32;

  // Every stage advances together when the output skid buffer has room (a register: no combinational
  // path from m_ready to s_ready).
  logic en;

  // --- hop fields carried down the pipeline (stage k holds a hop accepted k edges ago)
  logic                   v1, v2, v3, v4, v5, v6, v7, v8, v9;
  logic [63:0]            t1, t2, t3, t4, t5, t6, t7, t8;
  logic [31:0]            n1, n2, n3, n4, n5, n6, n7, n8, n9;   // bytes
  logic [LINK_ADDR_W-1:0] l1, l2, l3, l4, l5, l6, l7, l8, l9;   // link
  logic [63:0]            g1, g2, g3, g4, g5, g6, g7, g8, g9;   // tag
  logic [63:0]            lat3, lat4, lat5, lat6, lat7, lat8, lat9;
  // --- the multiplier: bytes = {b1, b0} (16-bit limbs), rate = {r2, r1, r0} (16/24/24-bit limbs);
  // product ij = b_i * r_j, 16 x 24 bits: one DSP48E2 each (27 x 18 signed)
  // S3: DSP input registers (A/B), one pair per product so that each can sit inside its DSP48E2
  logic [15:0]            b00, b01, b02, b10, b11, b12;         // bytes limb i of product ij
  logic [23:0]            a00, a01, a10, a11;                   // rate limb j of product ij
  logic [15:0]            a02, a12;
  logic [39:0]            pm00, pm01, pm10, pm11;               // S4: products (DSP M registers)
  logic [31:0]            pm02, pm12;
  logic [39:0]            pp00, pp01, pp10, pp11;               // S5: products (DSP P registers)
  logic [31:0]            pp02, pp12;
  logic [55:0]            q0, q1;                               // S6: bytes * r0, bytes * r1
  logic [47:0]            q2_6, q2_7;                           // S6, S7: bytes * r2
  logic [79:0]            r7;                                   // S7: bytes * {r1, r0}
  logic [63:0]            ser8;                                 // S8: ceil(bytes * rate / 2^32)
  // --- link_free: the RAM word, the forwarding selects and the loop register
  logic                   h1_7, h2_7, h3_7, h4_7;               // S7: same link as the hop 1..4 ahead
  logic                   sel8;                                 // S8: take the hop ahead's new link_free
  logic [63:0]            other8;                               // S8: link_free unless the hop ahead is on its link
  logic [63:0]            dep9, free9;                          // S9: departure, new link_free (loop register)
  logic                   fv1;                                  // the new link_free of the hops that left S9
  logic [LINK_ADDR_W-1:0] fl1;                                  // one (f1) and two (f2) edges ago: the
  logic [63:0]            ff1, ff2;                             // writes the RAM read of a hop in S5 missed

  // --- RAMs
  logic [127:0] cfg_rd_data;   // {latency, rate}, in S2
  logic [63:0]  free_rd_data;  // link_free of the hop in S7 (read from S5), without the last four writes
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
    .rd_en(en), .rd_addr(l5), .rd_data(free_rd_data)
  );

  // --- output skid buffer: its input is S9 with arrive = link_free + latency
  logic                   out_ready, out_busy;
  logic [CMPL_W-1:0]      out_word;

  sched_skid #(.WIDTH(CMPL_W)) out_skid (
    .clk(clk), .rst(rst),
    .s_valid(v9), .s_ready(out_ready), .s_data({dep9, free9 + lat9, g9, l9, n9}),
    .m_valid(m_valid), .m_ready(m_ready), .m_data(out_word), .busy(out_busy)
  );

  // --- combinational: S6's hazard detection, S7's forwarding, S8's link update (the loop)
  logic        h1_6, h2_6, h3_6, h4_6;
  logic [63:0] other7, free_cur8, dep8, free_new8, sum_t8, sum_f8;
  logic        later8;

  always_comb begin
    en = out_ready;
    s_ready = en;

    // S6: which of the four hops ahead (in S7, S8, S9 and the first forwarding register) share its link.
    h1_6 = v7 && l7 == l6;
    h2_6 = v8 && l8 == l6;
    h3_6 = v9 && l9 == l6;
    h4_6 = fv1 && fl1 == l6;

    // S7: link_free as of the hop two ahead: its new value is in free9, the next older ones in ff1, ff2.
    other7 = h2_7 ? free9 : h3_7 ? ff1 : h4_7 ? ff2 : free_rd_data;

    // S8, the loop-carried path: free9 -> 2:1 mux -> (compare | add) -> 2:1 mux -> free9.
    free_cur8 = sel8 ? free9 : other8;
    later8 = t8 > free_cur8;
    sum_t8 = t8 + ser8;
    sum_f8 = free_cur8 + ser8;
    dep8 = later8 ? t8 : free_cur8;
    // Carry select written as AND-OR: as a 2:1 mux, synthesis shares the two adders behind one mux of
    // their inputs ((later8 ? t8 : free_cur8) + ser8), which puts the compare and the add in series.
    free_new8 = ({64{later8}} & sum_t8) | ({64{!later8}} & sum_f8);

    // The RAM keeps link_free from S9's register; the load port wins (it is used only while idle).
    free_wr_en = cfg_wr_en || (en && v9);
    free_wr_addr = cfg_wr_en ? cfg_wr_link : l9;
    free_wr_data = cfg_wr_en ? cfg_wr_free : free9;

    {m_depart, m_arrive, m_tag, m_link, m_bytes} = out_word;
    busy = v1 || v2 || v3 || v4 || v5 || v6 || v7 || v8 || v9 || out_busy;
  end

  // --- sequential
  always_ff @(posedge clk) begin
    if (en) begin
      // S1: the hop; the cfg RAM latches s_link at this edge
      {v1, t1, n1, l1, g1} <= {s_valid, s_time, s_bytes, s_link, s_tag};
      // S2: the cfg word arrives from the RAM's output register
      {v2, t2, n2, l2, g2} <= {v1, t1, n1, l1, g1};
      // S3: multiplier operands (DSP A/B registers)
      {v3, t3, n3, l3, g3} <= {v2, t2, n2, l2, g2};
      {b00, b01, b02} <= {3{n2[15:0]}};
      {b10, b11, b12} <= {3{n2[31:16]}};
      {a00, a10} <= {2{cfg_rd_data[23:0]}};
      {a01, a11} <= {2{cfg_rd_data[47:24]}};
      {a02, a12} <= {2{cfg_rd_data[63:48]}};
      lat3 <= cfg_rd_data[127:64];
      // S4: six 16 x 24 products (DSP M registers)
      {v4, t4, n4, l4, g4, lat4} <= {v3, t3, n3, l3, g3, lat3};
      pm00 <= {24'd0, b00} * {16'd0, a00};
      pm01 <= {24'd0, b01} * {16'd0, a01};
      pm02 <= {16'd0, b02} * {16'd0, a02};
      pm10 <= {24'd0, b10} * {16'd0, a10};
      pm11 <= {24'd0, b11} * {16'd0, a11};
      pm12 <= {16'd0, b12} * {16'd0, a12};
      // S5: the products again (DSP P registers); the free RAM latches l5 at the edge leaving S5
      {v5, t5, n5, l5, g5, lat5} <= {v4, t4, n4, l4, g4, lat4};
      {pp00, pp01, pp02, pp10, pp11, pp12} <= {pm00, pm01, pm02, pm10, pm11, pm12};
      // S6: bytes * each rate limb
      {v6, t6, n6, l6, g6, lat6} <= {v5, t5, n5, l5, g5, lat5};
      q0 <= {16'd0, pp00} + {pp10, 16'd0};
      q1 <= {16'd0, pp01} + {pp11, 16'd0};
      q2_6 <= {16'd0, pp02} + {pp12, 16'd0};
      // S7: bytes * the low 48 rate bits; the hazard flags; the free RAM word arrives
      {v7, t7, n7, l7, g7, lat7} <= {v6, t6, n6, l6, g6, lat6};
      r7 <= {24'd0, q0} + {q1, 24'd0};
      q2_7 <= q2_6;
      {h1_7, h2_7, h3_7, h4_7} <= {h1_6, h2_6, h3_6, h4_6};
      // S8: ser = ceil(product / 2^32) = product[95:32] + (product[31:0] != 0), one carry chain
      {v8, t8, n8, l8, g8, lat8} <= {v7, t7, n7, l7, g7, lat7};
      ser8 <= {16'd0, r7[79:32]} + {q2_7, 16'd0} + {63'd0, |r7[31:0]};
      sel8 <= h1_7;
      other8 <= other7;
      // S9: departure and the new link_free; the RAM is written from here at the next edge
      {v9, n9, l9, g9, lat9} <= {v8, n8, l8, g8, lat8};
      dep9 <= dep8;
      free9 <= free_new8;
      // the writes a RAM read in S5 misses, kept for the forwarding in S6/S7
      // (f2's link and valid bit were compared while it was f1, into h4)
      {fv1, fl1, ff1} <= {v9, l9, free9};
      ff2 <= ff1;
    end

    if (rst) begin
      {v1, v2, v3, v4, v5, v6, v7, v8, v9} <= '0;
      fv1 <= 1'b0;
    end
  end

endmodule

`default_nettype wire
