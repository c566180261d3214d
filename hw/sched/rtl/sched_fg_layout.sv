// Frame generator, build stages 1-3: the descriptor in, the frame's lengths, and the bytes of its
// headers laid out (checksums, CRC and ICRC still zero: sched_fg_build fills them in). Fabemu mode:
// Ethernet II / IPv4 / UDP / fabemu header (102 bytes); RoCEv2 mode: Ethernet II / IPv4 / UDP 4791 /
// BTH / fabemu header (114 bytes), then the payload and pad zeros and the ICRC. Byte i of the frame is
// in bits 8i+7:8i of the images. Intake is one descriptor per enabled cycle.
`default_nettype none

module sched_fg_layout #(
  parameter int KW = 64                // bytes per stream beat (DATA_W / 8), a power of two >= 8
) (
  input  wire logic          clk,
  input  wire logic          rst,
  input  wire logic          en,       // the whole build pipeline moves
  // Descriptor (the fields of host/wire's FrameSpec; see sched_fg.sv).
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
  // Stage 3 outputs.
  output      logic          v3,
  output      logic [911:0]  img3,     // the 114 header bytes (fabemu mode: 102 and 12 zeros)
  output      logic [447:0]  fh3,      // fabemu header bytes 0..55 (the CRC'd ones)
  output      logic [15:0]   zeros3,   // RoCEv2: payload + pad bytes the ICRC crosses
  output      logic [15:0]   udp_len3,
  output      logic          roce3,
  output      logic [63:0]   sched3,
  output      logic [13:0]   nbm13,    // beats - 1
  output      logic [KW-1:0] keep3,    // tkeep of the last beat
  output      logic [KW-1:0] icrc_last3, icrc_pen3  // lanes of the ICRC in the last / the one before
);

  localparam int LW = $clog2(KW);

  // --- stage 1: the descriptor, and the payload rounded up to 4 bytes (RoCEv2 pad) ---
  logic         v1;
  logic [63:0]  sched1;
  logic         roce1;
  logic [111:0] eth1;
  logic [63:0]  ip1;
  logic [47:0]  ports_id1;                // src port, dst port, IP id
  logic [7:0]   tos1;
  logic [447:0] fh1;                      // fabemu header bytes 0..55, big-endian (byte 0 at the top)
  logic [95:0]  bth1;                     // BTH, big-endian, with its pad count
  logic [15:0]  pay1;
  logic [15:2]  pay4_1;                   // the payload rounded up to a multiple of 4, over 4
  always_ff @(posedge clk) begin
    if (en) begin
      v1 <= s_valid;
      sched1 <= s_sched;
      roce1 <= s_roce;
      eth1 <= {s_dst_mac, s_src_mac, 16'h0800};
      ip1 <= {s_src_ip, s_dst_ip};
      ports_id1 <= {s_src_port, s_roce ? 16'd4791 : s_dst_port, s_ip_id};
      tos1 <= {s_dscp, s_ecn};
      fh1 <= {32'h4645_4D55, 8'd1, s_kind, s_flags, s_src_rank, s_dst_rank, s_msg_id, s_seq, s_count,
              s_msg_len, s_offset, s_tx_time};
      bth1 <= {s_bth_opcode, s_bth_se, s_bth_m, 2'(-s_payload_bytes[1:0]), s_bth_tver, s_bth_pkey, 8'd0, s_bth_qp,
               s_bth_a, 7'd0, s_bth_psn};
      pay1 <= s_payload_bytes;
      pay4_1 <= 14'((17'(s_payload_bytes) + 17'd3) >> 2);
    end
    if (rst) v1 <= 1'b0;
  end

  // --- stage 2: lengths ---
  logic         v2, roce2;
  logic [63:0]  sched2;
  logic [111:0] eth2;
  logic [63:0]  ip2;
  logic [47:0]  ports_id2;
  logic [7:0]   tos2;
  logic [447:0] fh2;
  logic [95:0]  bth2;
  logic [15:0]  base2, ip_len2, udp_len2;
  logic [16:0]  len2;                     // frame bytes
  logic [15:0]  base1;                    // the bytes after the fabemu header: payload (+ pad)
  assign base1 = roce1 ? {pay4_1, 2'b00} : pay1;
  always_ff @(posedge clk) begin
    if (en) begin
      v2 <= v1;
      roce2 <= roce1;
      sched2 <= sched1;
      eth2 <= eth1;
      ip2 <= ip1;
      ports_id2 <= ports_id1;
      tos2 <= tos1;
      fh2 <= fh1;
      bth2 <= bth1;
      base2 <= base1;
      ip_len2 <= base1 + (roce1 ? 16'd104 : 16'd88);
      udp_len2 <= base1 + (roce1 ? 16'd84 : 16'd68);
      len2 <= {1'b0, base1} + (roce1 ? 17'd118 : 17'd102);
    end
    if (rst) v2 <= 1'b0;
  end

  // --- stage 3: the header bytes, beat count and lane masks ---
  logic [911:0] be;                       // the header bytes big-endian: byte 0 at bits 911:904
  logic [LW:0]  rest;                     // bytes in the last beat, 1..KW
  assign be = {eth2, 8'h45, tos2, ip_len2, ports_id2[15:0], 16'h4000, 8'd64, 8'd17, 16'd0, ip2,
               ports_id2[47:16], udp_len2, 16'd0,
               roce2 ? {bth2, fh2, 32'd0} : {fh2, 32'd0, 96'd0}};
  assign rest = len2[LW-1:0] == '0 ? (LW+1)'(KW) : {1'b0, len2[LW-1:0]};
  always_ff @(posedge clk) begin
    if (en) begin
      v3 <= v2;
      for (int i = 0; i < 114; i++) img3[8 * i +: 8] <= be[911 - 8 * i -: 8];
      for (int i = 0; i < 56; i++) fh3[8 * i +: 8] <= fh2[447 - 8 * i -: 8];
      zeros3 <= base2;
      udp_len3 <= udp_len2;
      roce3 <= roce2;
      sched3 <= sched2;
      nbm13 <= 14'((len2 - 17'd1) >> LW);
      for (int j = 0; j < KW; j++) begin
        keep3[j] <= j < 32'(rest);
        icrc_last3[j] <= roce2 && j < 32'(rest) && j + 4 >= 32'(rest);
        icrc_pen3[j] <= roce2 && 32'(rest) < 4 && j >= KW + 32'(rest) - 4;
      end
    end
    if (rst) v3 <= 1'b0;
  end

endmodule

`default_nettype wire
