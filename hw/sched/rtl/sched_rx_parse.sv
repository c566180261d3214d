// Receive path, parse stages Q1..Q6: classifies one frame record per cycle as host/wire's decode()
// does with verify_icrc off (DecodeRules), in decode()'s order, so that a frame gets the first reason
// that applies (the Verdict numbers of host/wire/frame.h; 0 = ours): lengths, EtherType, IPv4
// version/IHL/fragment, IPv4 header checksum (sched_csum_tree, sched_csum_fold), UDP, the UDP checksum
// (the segment's word sum from sched_rx_usum plus the pseudo-header, folded; a zero checksum field is
// not checked in RoCEv2 mode), the destination port (RoCEv2: 4791; fabemu mode: [port_lo, port_hi]),
// the BTH (TVer, opcode, pad), the fabemu header's magic, version, CRC-32 (sched_crc_lin, two stages)
// and field consistency. The RoCEv2 ICRC is not checked. Every condition is a register by Q5; the
// verdict and the frame's fields leave registered at Q6.
`default_nettype none

module sched_rx_parse #(
  parameter int KW = 64                        // bytes per beat
) (
  input  wire logic          clk,
  input  wire logic          rst,
  input  wire logic          cfg_roce,         // RoCEv2 mode (DecodeRules::mode)
  input  wire logic [15:0]   cfg_port_lo,      // fabemu mode: accepted UDP destination ports
  input  wire logic [15:0]   cfg_port_hi,
  // Frame record (sched_rx_capture).
  input  wire logic          f_valid,
  // verilator lint_off UNUSED
  input  wire logic [911:0]  f_hdr,            // the MAC addresses and some header bytes are not checked
  // verilator lint_on UNUSED
  input  wire logic [15:0]   f_nbb,
  input  wire logic [KW-1:0] f_keep,
  input  wire logic [63:0]   f_cycle,
  input  wire logic [31:0]   f_usum,           // the UDP segment's word sum
  // Q6: verdict and fields.
  output      logic          p_valid,
  output      logic [3:0]    p_verdict,
  output      logic [7:0]    p_kind,
  output      logic [31:0]   p_src, p_dst, p_seq, p_count,
  output      logic [63:0]   p_msg_id, p_tx_time, p_cycle,
  output      logic [15:0]   p_payload,        // bytes after the fabemu header (RoCEv2: without pad, ICRC)
  output      logic [19:0]   p_len,            // frame bytes (wire bytes without FCS)
  output      logic          p_ce,             // IPv4 ECN field == CE (3)
  output      logic [15:0]   p_ip_id           // IPv4 identification (sched_hil: the flow's departure sequence)
);

  localparam logic [31:0] POLY = 32'hEDB8_8320;
  localparam int LW = $clog2(KW);
  function automatic logic [31:0] crc_bytes(input logic [31:0] c, input int n);
    logic [31:0] r;
    r = c;
    for (int i = 0; i < n; i++) begin
      for (int s = 0; s < 8; s++) r = r[0] ? (r >> 1) ^ POLY : r >> 1;
    end
    crc_bytes = r;
  endfunction
  localparam logic [31:0] HDR_INIT = ~crc_bytes(32'hFFFF_FFFF, 56);

  function automatic logic [15:0] be16(input logic [911:0] h, input int i);
    be16 = {h[8 * i +: 8], h[8 * (i + 1) +: 8]};
  endfunction

  // --- Q0 -> Q1: header fields, the fabemu header (at byte 42, or 54 after the BTH) ---
  logic [479:0] fh0;                           // fabemu header, byte 0 at bits 7:0
  assign fh0 = cfg_roce ? f_hdr[8 * 54 +: 480] : f_hdr[8 * 42 +: 480];
  logic        v1;
  logic [6:0]  pc1;
  logic [15:0] nbb1, etype1, iplen1, dport1, udplen1;
  logic [7:0]  ip0_1, tos1, proto1, op1;
  logic [5:0]  b43_1;                          // BTH byte 1: pad count (5:4), TVer (3:0)
  logic        frag1;
  logic [479:0] fh1;
  logic [6:0] pc;                              // bytes in the last beat
  always_comb begin
    pc = '0;
    for (int j = 0; j < KW; j++) pc += 7'(f_keep[j]);
  end
  always_ff @(posedge clk) begin
    v1 <= f_valid;
    pc1 <= pc;
    nbb1 <= f_nbb;
    etype1 <= be16(f_hdr, 12);
    ip0_1 <= f_hdr[8 * 14 +: 8];
    tos1 <= f_hdr[8 * 15 +: 8];
    iplen1 <= be16(f_hdr, 16);
    frag1 <= (be16(f_hdr, 20) & 16'h3FFF) != 16'd0;
    proto1 <= f_hdr[8 * 23 +: 8];
    dport1 <= be16(f_hdr, 36);
    udplen1 <= be16(f_hdr, 38);
    op1 <= f_hdr[8 * 42 +: 8];
    b43_1 <= f_hdr[8 * 43 +: 6];
    fh1 <= fh0;
    if (rst) v1 <= 1'b0;
  end

  // IPv4 header sum (Q1, Q2), folded (Q3, Q4): right when the folded sum is 0xFFFF (q == 0).
  logic [159:0] ipw0;
  for (genvar w = 0; w < 10; w++) begin : g_ipw
    assign ipw0[16 * w +: 16] = be16(f_hdr, 14 + 2 * w);
  end
  logic [23:0] ipsum2;
  logic [15:0] ipc4;
  sched_csum_tree #(.N(10)) ip_tree (.clk, .en(1'b1), .words(ipw0), .q(ipsum2));
  sched_csum_fold ip_fold (.clk, .en(1'b1), .sum(ipsum2), .q(ipc4));
  // UDP checksum: the segment's sum plus the pseudo-header (source and destination address, protocol
  // 17, UDP length) in Q1 and Q2, pre-folded in Q3, folded in Q4 and Q5 (right when q == 0). In RoCEv2
  // mode a zero checksum field means none (decode(): the ICRC protects the packet).
  logic [32:0] us1;
  logic [17:0] ups1;
  logic [33:0] ut2;
  logic [19:0] uf3;
  logic [15:0] udpc5;
  logic        uzero1;
  always_ff @(posedge clk) begin
    us1 <= (33'(f_usum) + 33'(be16(f_hdr, 26))) + (33'(be16(f_hdr, 28)) + 33'(be16(f_hdr, 30)));
    ups1 <= (18'(be16(f_hdr, 32)) + 18'(be16(f_hdr, 38))) + 18'd17;
    uzero1 <= cfg_roce && be16(f_hdr, 40) == 16'd0;
    ut2 <= 34'(us1) + 34'(ups1);
    uf3 <= 20'(ut2[15:0]) + 20'(ut2[33:16]);
  end
  sched_csum_fold udp_fold (.clk, .en(1'b1), .sum(24'(uf3)), .q(udpc5));

  // Header CRC of bytes 0..55 (Q1, Q2).
  logic [31:0] hcrc2;
  sched_crc_lin #(.NB(56), .INIT(HDR_INIT)) hdr_crc (.clk, .en(1'b1), .d(fh0[447:0]), .q(hcrc2));

  // --- Q1 -> Q2: frame length, the conditions that need no length ---
  logic        v2, c_etype2, c_iphdr2, t_iplen20_2, c_proto2, t_iplen28_2, t_udplen2, c_port2;
  logic        t_l4_12_2, c_bth2, t_l4_76_2, c_pad2;
  logic [19:0] n2;
  logic [15:0] iplen2;
  logic [16:0] hlen2;                          // bytes the fabemu header parse sees (header + payload)
  logic [479:0] fh2;
  logic [7:0]  tos2;
  logic [16:0] l4len1;
  logic [1:0]  pad1;
  assign l4len1 = 17'(udplen1) - 17'd8;
  assign pad1 = b43_1[5:4];
  always_ff @(posedge clk) begin
    v2 <= v1;
    n2 <= (20'(nbb1) << LW) + 20'(pc1);
    iplen2 <= iplen1;
    c_etype2 <= etype1 != 16'h0800;
    c_iphdr2 <= ip0_1 != 8'h45 || frag1;
    t_iplen20_2 <= iplen1 < 16'd20;
    c_proto2 <= proto1 != 8'd17;
    t_iplen28_2 <= iplen1 < 16'd28;
    t_udplen2 <= 17'(udplen1) + 17'd20 != 17'(iplen1);
    c_port2 <= cfg_roce ? dport1 != 16'd4791 : (dport1 < cfg_port_lo || dport1 > cfg_port_hi);
    t_l4_12_2 <= cfg_roce && l4len1 < 17'd12;
    c_bth2 <= cfg_roce && (b43_1[3:0] != 4'd0 || !(op1 == 8'h00 || op1 == 8'h01 || op1 == 8'h02 || op1 == 8'h04));
    t_l4_76_2 <= cfg_roce && l4len1 < 17'd76;
    c_pad2 <= cfg_roce && l4len1 < 17'd76 + 17'(pad1);
    hlen2 <= cfg_roce ? l4len1 - 17'd16 - 17'(pad1) : l4len1;
    fh2 <= fh1;
    tos2 <= tos1;
    if (rst) v2 <= 1'b0;
  end

  // Fabemu header fields (big-endian).
  function automatic logic [31:0] fb32(input logic [479:0] h, input int i);
    fb32 = {h[8 * i +: 8], h[8 * (i + 1) +: 8], h[8 * (i + 2) +: 8], h[8 * (i + 3) +: 8]};
  endfunction
  function automatic logic [63:0] fb64(input logic [479:0] h, input int i);
    fb64 = {fb32(h, i), fb32(h, i + 4)};
  endfunction

  // --- Q2 -> Q3: conditions on the length and the header ---
  logic        v3, t_n14_3, t_n34_3, t_ipn3, c_magic3, t_h60_3, c_ver3, c_crc3, h4_3;
  logic [15:0] pay3;
  logic [7:0]  kind3;
  logic [31:0] seq3, cnt3;
  logic [63:0] mlen3, off3;
  always_ff @(posedge clk) begin
    v3 <= v2;
    t_n14_3 <= n2 < 20'd14;
    t_n34_3 <= n2 < 20'd34;
    t_ipn3 <= t_iplen20_2 || 20'(iplen2) + 20'd14 > n2;
    h4_3 <= hlen2 >= 17'd4;
    c_magic3 <= fb32(fh2, 0) != 32'h4645_4D55;
    t_h60_3 <= hlen2 < 17'd60;
    c_ver3 <= fh2[8 * 4 +: 8] != 8'd1;
    c_crc3 <= fb32(fh2, 56) != hcrc2;
    pay3 <= 16'(hlen2 - 17'd60);
    kind3 <= fh2[8 * 5 +: 8];
    seq3 <= fb32(fh2, 24);
    cnt3 <= fb32(fh2, 28);
    mlen3 <= fb64(fh2, 32);
    off3 <= fb64(fh2, 40);
    if (rst) v3 <= 1'b0;
  end

  // --- Q3 -> Q4 -> Q5: the fields' consistency (fabemu_header.cpp, fields_consistent) ---
  logic        v4, v5, f_data4, f_ack4, f_nack4, seq_lt4, seq_le4, off_le_cnt4, pay_le4, pay0_4, pay4_4;
  logic [63:0] room4, off4;                    // message length - payload
  logic        bad_fields5, c_ip5;
  always_ff @(posedge clk) begin
    v4 <= v3;
    f_data4 <= kind3 == 8'd1;
    f_ack4 <= kind3 == 8'd2;
    f_nack4 <= kind3 == 8'd3;
    seq_lt4 <= seq3 < cnt3;
    seq_le4 <= seq3 <= cnt3;
    off_le_cnt4 <= off3 <= 64'(cnt3);
    pay_le4 <= 64'(pay3) <= mlen3;
    room4 <= mlen3 - 64'(pay3);
    off4 <= off3;
    pay0_4 <= pay3 == 16'd0;
    pay4_4 <= pay3[1:0] == 2'd0;
    v5 <= v4;
    bad_fields5 <= !((f_data4 && seq_lt4 && pay_le4 && off4 <= room4) || (f_ack4 && pay0_4 && seq_le4) ||
                     (f_nack4 && pay4_4 && seq_le4 && off_le_cnt4));
    c_ip5 <= ipc4 != 16'd0;
    if (rst) begin
      v4 <= 1'b0;
      v5 <= 1'b0;
    end
  end

  // The other conditions wait for Q5.
  logic t_n14_5, c_etype5, t_n34_5, c_iphdr5, t_ipn5, c_proto5, t_iplen28_5, t_udplen5, c_port5;
  logic t_l4_12_5, c_bth5, t_l4_76_5, c_pad5, c_magic5, h4_5, t_h60_5, c_ver5, c_crc5;
  sched_delay #(.W(9), .N(3)) d_c2 (.clk, .en(1'b1),
    .d({c_etype2, c_iphdr2, c_proto2, t_iplen28_2, t_udplen2, c_port2, t_l4_12_2, c_bth2, t_l4_76_2}),
    .q({c_etype5, c_iphdr5, c_proto5, t_iplen28_5, t_udplen5, c_port5, t_l4_12_5, c_bth5, t_l4_76_5}));
  sched_delay #(.W(1), .N(3)) d_c2b (.clk, .en(1'b1), .d(c_pad2), .q(c_pad5));
  logic uzero5;
  sched_delay #(.W(1), .N(4)) d_uz (.clk, .en(1'b1), .d(uzero1), .q(uzero5));
  sched_delay #(.W(8), .N(2)) d_c3 (.clk, .en(1'b1),
    .d({t_n14_3, t_n34_3, t_ipn3, c_magic3, h4_3, t_h60_3, c_ver3, c_crc3}),
    .q({t_n14_5, t_n34_5, t_ipn5, c_magic5, h4_5, t_h60_5, c_ver5, c_crc5}));

  // --- Q5 -> Q6: the first reason in decode()'s order ---
  logic [3:0] verdict5;
  always_comb begin
    if (t_n14_5) verdict5 = 4'd1;                               // kTruncated
    else if (c_etype5) verdict5 = 4'd2;                         // kNotIpv4
    else if (t_n34_5) verdict5 = 4'd1;
    else if (c_iphdr5) verdict5 = 4'd3;                         // kBadIpHeader
    else if (t_ipn5) verdict5 = 4'd1;
    else if (c_ip5) verdict5 = 4'd4;                            // kBadIpChecksum
    else if (c_proto5) verdict5 = 4'd5;                         // kNotUdp
    else if (t_iplen28_5 || t_udplen5) verdict5 = 4'd1;
    else if (!uzero5 && udpc5 != 16'd0) verdict5 = 4'd6;        // kBadUdpChecksum
    else if (c_port5) verdict5 = 4'd7;                          // kWrongPort
    else if (t_l4_12_5) verdict5 = 4'd1;
    else if (c_bth5) verdict5 = 4'd8;                           // kBadBth
    else if (t_l4_76_5) verdict5 = 4'd1;
    else if (c_pad5) verdict5 = 4'd8;
    else if (h4_5 && c_magic5) verdict5 = 4'd10;                // kBadMagic
    else if (t_h60_5) verdict5 = 4'd1;
    else if (c_ver5) verdict5 = 4'd11;                          // kBadVersion
    else if (c_crc5) verdict5 = 4'd12;                          // kBadHeaderCrc
    else if (bad_fields5) verdict5 = 4'd13;                     // kBadFields
    else verdict5 = 4'd0;                                       // kOurs
  end

  // Fields for Q6 (magic, version, flags, lengths and the CRC are not passed on).
  // verilator lint_off UNUSED
  logic [479:0] fh6;
  logic [7:0]   tos6;
  // verilator lint_on UNUSED
  sched_delay #(.W(480 + 8), .N(4)) d_fh (.clk, .en(1'b1), .d({fh2, tos2}), .q({fh6, tos6}));
  sched_delay #(.W(20), .N(4)) d_n (.clk, .en(1'b1), .d(n2), .q(p_len));
  sched_delay #(.W(16), .N(3)) d_pay (.clk, .en(1'b1), .d(pay3), .q(p_payload));
  sched_delay #(.W(64), .N(6)) d_cyc (.clk, .en(1'b1), .d(f_cycle), .q(p_cycle));
  sched_delay #(.W(16), .N(6)) d_ipid (.clk, .en(1'b1), .d(be16(f_hdr, 18)), .q(p_ip_id));
  assign p_kind = fh6[8 * 5 +: 8];
  assign p_src = fb32(fh6, 8);
  assign p_dst = fb32(fh6, 12);
  assign p_msg_id = fb64(fh6, 16);
  assign p_seq = fb32(fh6, 24);
  assign p_count = fb32(fh6, 28);
  assign p_tx_time = fb64(fh6, 48);
  assign p_ce = tos6[1:0] == 2'd3;

  always_ff @(posedge clk) begin
    p_valid <= v5;
    p_verdict <= verdict5;
    if (rst) p_valid <= 1'b0;
  end

endmodule

`default_nettype wire
