// Frame generator, build pipeline (core clock domain): one descriptor per enabled cycle in, one frame
// record per enabled cycle out, 13 stages. The headers' bytes (sched_fg_layout, stages 1-3), then in
// parallel: the fabemu header CRC-32 (56 bytes, stages 4-5), the RoCEv2 ICRC (the masked IPv4, UDP
// and BTH bytes and the fabemu header, stages 4-5; the header CRC's own bytes added in 6-8; the zero
// payload and pad crossed by one multiplication by x^(8n), n the zero bytes: 4-6 and 9-10), the IPv4
// checksum (4-7) and the UDP checksum (pseudo-header and every header word 4-6, the CRC's words 7,
// the ICRC's 11, folded 12-13). Everything else waits in delay lines (shift-register LUTs). The whole
// pipeline moves when `en` (the FIFO has room) is high; s_ready is `en`.
`default_nettype none

module sched_fg_build #(
  parameter int KW = 64
) (
  input  wire logic          clk,
  input  wire logic          rst,
  input  wire logic          en,
  input  wire logic          s_valid,
  input  wire logic [63:0]   s_sched,
  input  wire logic          s_roce,
  input  wire logic [47:0]   s_dst_mac, s_src_mac,
  input  wire logic [31:0]   s_src_ip, s_dst_ip,
  input  wire logic [15:0]   s_src_port, s_dst_port, s_ip_id,
  input  wire logic [5:0]    s_dscp,
  input  wire logic [1:0]    s_ecn,
  input  wire logic [7:0]    s_kind,
  input  wire logic [15:0]   s_flags,
  input  wire logic [31:0]   s_src_rank, s_dst_rank, s_seq, s_count,
  input  wire logic [63:0]   s_msg_id, s_msg_len, s_offset, s_tx_time,
  input  wire logic [15:0]   s_payload_bytes,
  input  wire logic [7:0]    s_bth_opcode,
  input  wire logic          s_bth_se, s_bth_m, s_bth_a,
  input  wire logic [3:0]    s_bth_tver,
  input  wire logic [15:0]   s_bth_pkey,
  input  wire logic [23:0]   s_bth_qp, s_bth_psn,
  // The built frame (stage 13), written to the FIFO when f_valid && en.
  output      logic          f_valid,
  output      logic [911:0]  f_img,    // header bytes with every checksum and the CRC filled in
  output      logic [63:0]   f_sched,
  output      logic [13:0]   f_nbm1,
  output      logic [KW-1:0] f_keep, f_icrc_last, f_icrc_pen,
  output      logic [31:0]   f_icrc    // RoCEv2 ICRC (its bytes go little-endian on the wire)
);

  localparam logic [31:0] POLY = 32'hEDB8_8320;
  localparam int LAST = 13;

  // The raw register `c` after `n` bytes of value `b`.
  function automatic logic [31:0] crc_bytes(input logic [31:0] c, input int n, input logic [7:0] b);
    logic [31:0] r;
    r = c;
    for (int i = 0; i < n; i++) begin
      r = r ^ {24'd0, b};
      for (int s = 0; s < 8; s++) r = r[0] ? (r >> 1) ^ POLY : r >> 1;
    end
    crc_bytes = r;
  endfunction
  // Header CRC = ~(register of 0xFFFFFFFF across the 56 bytes): the start's part, inverted.
  localparam logic [31:0] HDR_INIT = ~crc_bytes(32'hFFFF_FFFF, 56, 8'h00);
  // ICRC: 0xFFFFFFFF across 8 bytes of 0xFF (the masked LRH), then across the 100 bytes of the block.
  localparam logic [31:0] ICRC_INIT = crc_bytes(crc_bytes(32'hFFFF_FFFF, 8, 8'hFF), 100, 8'h00);

  // --- stages 1-3 ---
  logic          v3, roce3;
  logic [911:0]  img3;
  logic [447:0]  fh3;
  logic [15:0]   zeros3, udp_len3;
  logic [63:0]   sched3;
  logic [13:0]   nbm13;
  logic [KW-1:0] keep3, icrc_last3, icrc_pen3;
  sched_fg_layout #(.KW(KW)) layout (.*);

  // --- fabemu header CRC (stages 4-5) ---
  logic [31:0] hcrc5;
  sched_crc_lin #(.NB(56), .INIT(HDR_INIT)) hdr_crc (.clk, .en, .d(fh3), .q(hcrc5));

  // --- RoCEv2 ICRC ---
  // The 100 bytes after the masked LRH: IPv4, UDP and BTH with their variant fields all ones, the
  // fabemu header with its CRC field zero (added below: the CRC is linear).
  logic [799:0] block3;
  always_comb begin
    block3 = img3[8 * 14 +: 800];
    for (int i = 0; i < 40; i++) begin
      // IPv4 TOS (1), TTL (8), checksum (10, 11); UDP checksum (26, 27); BTH reserved byte (32).
      if (i == 1 || i == 8 || i == 10 || i == 11 || i == 26 || i == 27 || i == 32) block3[8 * i +: 8] = 8'hFF;
    end
  end
  logic [31:0] ipre5, icrc_c7, ipre7, xn6, xn8, icrc10;
  logic [31:0] hcrc_be5;
  logic [31:0] sh8;                                    // the ICRC register after the headers
  sched_crc_lin #(.NB(100), .INIT(ICRC_INIT)) icrc_head (.clk, .en, .d(block3), .q(ipre5));
  // The header CRC's 4 bytes end the block: their part is the CRC of those bytes from zero.
  assign hcrc_be5 = {hcrc5[7:0], hcrc5[15:8], hcrc5[23:16], hcrc5[31:24]};  // byte 0 = bits 31:24
  sched_crc_lin #(.NB(4)) icrc_crcf (.clk, .en, .d(hcrc_be5), .q(icrc_c7));
  sched_delay #(.W(32), .N(2)) d_ipre (.clk, .en, .d(ipre5), .q(ipre7));
  always_ff @(posedge clk) if (en) sh8 <= ipre7 ^ icrc_c7;
  sched_crc_xpow8 zeros_op (.clk, .en, .n(zeros3), .q(xn6));
  sched_delay #(.W(32), .N(2)) d_xn (.clk, .en, .d(xn6), .q(xn8));
  sched_crc_mulmod #(.OUT_XOR(32'hFFFF_FFFF)) zero_cross (.clk, .en, .a(xn8), .b(sh8), .q(icrc10));

  // --- IPv4 header checksum (stages 4-7) ---
  logic [159:0] ip_words3;
  logic [23:0]  ip_sum5;
  logic [15:0]  ipc7;
  for (genvar w = 0; w < 10; w++) begin : g_ipw
    assign ip_words3[16 * w +: 16] = {img3[8 * (14 + 2 * w) +: 8], img3[8 * (15 + 2 * w) +: 8]};
  end
  sched_csum_tree #(.N(10)) ip_tree (.clk, .en, .words(ip_words3), .q(ip_sum5));
  sched_csum_fold ip_fold (.clk, .en, .sum(ip_sum5), .q(ipc7));

  // --- UDP checksum: pseudo-header (addresses, protocol, length) and the UDP segment's header words
  // (bytes 34..113; the checksum field zero) in stages 4-6, the CRC's words in 7, the ICRC's in 11 ---
  logic [16*46-1:0] udp_words3;
  logic [23:0]      udp_main6, udp7, udp10, udp11;
  logic [31:0]      hcrc6;
  logic             roce10;
  sched_delay #(.W(1), .N(7)) d_roce (.clk, .en, .d(roce3), .q(roce10));
  logic [15:0]      udpc13;
  for (genvar w = 0; w < 44; w++) begin : g_udpw
    assign udp_words3[16 * w +: 16] = {img3[8 * (26 + 2 * w) +: 8], img3[8 * (27 + 2 * w) +: 8]};
  end
  assign udp_words3[16 * 44 +: 32] = {udp_len3, 16'd17};
  sched_csum_tree #(.N(46)) udp_tree (.clk, .en, .words(udp_words3), .q(udp_main6));
  always_ff @(posedge clk) begin
    if (en) begin
      hcrc6 <= hcrc5;
      udp7 <= udp_main6 + (24'(hcrc6[31:16]) + 24'(hcrc6[15:0]));
      udp11 <= udp10 + (roce10 ? 24'({icrc10[7:0], icrc10[15:8]}) + 24'({icrc10[23:16], icrc10[31:24]}) : 24'd0);
    end
  end
  sched_delay #(.W(24), .N(3)) d_udp (.clk, .en, .d(udp7), .q(udp10));
  sched_csum_fold #(.ZERO_AS_FFFF(1'b1)) udp_fold (.clk, .en, .sum(udp11), .q(udpc13));

  // --- everything else waits for stage 13 ---
  logic [911:0] img13;
  logic         roce13;
  logic [31:0]  hcrc13, icrc13;
  logic [15:0]  ipc13;
  logic [LAST:4] v;                                    // valid of stages 4..13
  sched_delay #(.W(912 + 1 + 64 + 14 + 3 * KW), .N(LAST - 3)) d_frame (.clk, .en,
    .d({img3, roce3, sched3, nbm13, keep3, icrc_last3, icrc_pen3}),
    .q({img13, roce13, f_sched, f_nbm1, f_keep, f_icrc_last, f_icrc_pen}));
  sched_delay #(.W(32), .N(LAST - 5)) d_hcrc (.clk, .en, .d(hcrc5), .q(hcrc13));
  sched_delay #(.W(16), .N(LAST - 7)) d_ipc (.clk, .en, .d(ipc7), .q(ipc13));
  sched_delay #(.W(32), .N(LAST - 10)) d_icrc (.clk, .en, .d(icrc10), .q(icrc13));
  always_ff @(posedge clk) begin
    if (en) v <= {v[LAST-1:4], v3};
    if (rst) v <= '0;
  end

  assign f_valid = v[LAST];
  assign f_icrc = roce13 ? icrc13 : 32'd0;
  always_comb begin
    f_img = img13;
    f_img[8 * 24 +: 16] = {ipc13[7:0], ipc13[15:8]};
    f_img[8 * 40 +: 16] = {udpc13[7:0], udpc13[15:8]};
    if (roce13) f_img[8 * 110 +: 32] = {hcrc13[7:0], hcrc13[15:8], hcrc13[23:16], hcrc13[31:24]};
    else f_img[8 * 98 +: 32] = {hcrc13[7:0], hcrc13[15:8], hcrc13[23:16], hcrc13[31:24]};
  end

endmodule

`default_nettype wire
