// Frame generator: turns scheduled departures into AXI4-Stream Ethernet II / IPv4 / UDP / fabemu
// header / zero payload frames (the fabemu wire format of host/dpdk/README.md, byte for byte what
// host/wire/frame.cpp encode() writes) whose first beat is presented at the departure's clock cycle.
// Every per-flow field (MACs, IPv4 addresses, UDP ports, IP id, DSCP) comes with the descriptor.
// 64-bit stream, byte 0 of the frame in tdata[7:0]; no FCS (the MAC appends it).
`default_nettype none

module sched_frame_gen (
  input  wire logic        clk,
  input  wire logic        rst,

  // Departure descriptor (valid/ready).
  input  wire logic        s_valid,
  output      logic        s_ready,
  input  wire logic [63:0] s_sched,       // clock cycle (of `cycle`) at which the first beat is presented
  input  wire logic [47:0] s_dst_mac,     // as on the wire: bits 47:40 are the first byte
  input  wire logic [47:0] s_src_mac,
  input  wire logic [31:0] s_src_ip,      // 198.18.0.1 == 32'hC6120001
  input  wire logic [31:0] s_dst_ip,
  input  wire logic [15:0] s_src_port,
  input  wire logic [15:0] s_dst_port,
  input  wire logic [15:0] s_ip_id,
  input  wire logic [5:0]  s_dscp,
  input  wire logic [7:0]  s_kind,        // 1 data, 2 ACK (no payload: s_payload_bytes must be 0)
  input  wire logic [15:0] s_flags,
  input  wire logic [31:0] s_src_rank,
  input  wire logic [31:0] s_dst_rank,
  input  wire logic [63:0] s_msg_id,
  input  wire logic [31:0] s_seq,
  input  wire logic [31:0] s_count,
  input  wire logic [63:0] s_msg_len,
  input  wire logic [63:0] s_offset,
  input  wire logic [63:0] s_tx_time,     // picoseconds of emulated time
  input  wire logic [15:0] s_payload_bytes, // zero bytes after the header, at most 65447 (IPv4 limit)

  // AXI4-Stream master.
  output      logic [63:0] m_axis_tdata,
  output      logic [7:0]  m_axis_tkeep,
  output      logic        m_axis_tlast,
  output      logic        m_axis_tvalid,
  input  wire logic        m_axis_tready,

  // Status.
  output      logic [63:0] cycle,         // free-running, 0 in the cycle after reset
  output      logic [31:0] frames,        // frames whose first beat has been presented
  output      logic [31:0] late_frames    // of those, presented after their scheduled cycle
);

  localparam int HDR_BYTES = 102;                  // Ethernet 14 + IPv4 20 + UDP 8 + fabemu 60
  localparam int HDR_BEATS = 13;                   // ceil(102 / 8): beat 12 ends with 2 payload zeros
  localparam int HDR_W = HDR_BEATS * 64;

  // --- helpers -----------------------------------------------------------------------------------

  // CRC-32 (IEEE, reflected, as zlib) of the 56 bytes of `b` (first byte in bits 447:440).
  function automatic logic [31:0] crc32_56(input logic [447:0] b);
    logic [31:0] c;
    c = 32'hFFFF_FFFF;
    for (int i = 0; i < 56; i++) begin
      for (int k = 0; k < 8; k++) begin
        // XOR form (no data-dependent if): synthesis reduces it to an XOR tree per output bit.
        c = (c >> 1) ^ ({32{c[0] ^ b[447 - 8 * i - 7 + k]}} & 32'hEDB8_8320);
      end
    end
    crc32_56 = ~c;
  endfunction

  // RFC 1071 ones'-complement sum (not inverted) folded to 16 bits.
  function automatic logic [15:0] fold16(input logic [23:0] s);
    logic [16:0] t;
    t = {1'b0, s[15:0]} + {9'd0, s[23:16]};
    fold16 = t[15:0] + {15'd0, t[16]};
  endfunction

  // --- descriptor intake and header build (multi-cycle, one descriptor at a time) -----------------
  // B_IDLE: s_ready; B_CRC: header CRC; B_SUM: IPv4 and UDP checksums; B_DONE: waits for the pending
  // slot, then writes it.
  typedef enum logic [1:0] {B_IDLE, B_CRC, B_SUM, B_DONE} bstate_t;
  bstate_t bstate_reg, bstate_next;

  logic [63:0]  d_sched_reg, d_sched_next;
  logic [111:0] d_eth_reg, d_eth_next;            // dst MAC, src MAC, EtherType
  logic [63:0]  d_ipaddr_reg, d_ipaddr_next;      // src IP, dst IP
  logic [31:0]  d_ports_reg, d_ports_next;        // src port, dst port
  logic [15:0]  d_ip_id_reg, d_ip_id_next;
  logic [5:0]   d_dscp_reg, d_dscp_next;
  logic [15:0]  d_payload_reg, d_payload_next;
  logic [447:0] d_fh_reg, d_fh_next;              // fabemu header bytes 0..55, big-endian
  logic [31:0]  crc_reg, crc_next;
  logic [15:0]  ip_csum_reg, ip_csum_next;
  logic [15:0]  udp_csum_reg, udp_csum_next;

  // The pending frame: built, waiting for the transmitter.
  logic              pend_valid_reg, pend_valid_next;
  logic [HDR_W-1:0]  pend_hdr_reg, pend_hdr_next;  // frame bytes 0..103, byte i in bits 8i+7:8i
  logic [63:0]       pend_sched_reg, pend_sched_next;
  logic [13:0]       pend_last_reg, pend_last_next; // index of the last beat
  logic [7:0]        pend_keep_reg, pend_keep_next; // tkeep of the last beat

  // The frame on the wire.
  logic              busy_reg, busy_next;           // a frame's beats are being presented
  logic [HDR_W-1:0]  cur_hdr_reg, cur_hdr_next;    // beats not yet transferred; beat in tdata at 63:0
  logic [13:0]       cur_beat_reg, cur_beat_next;   // index of the beat in m_axis_tdata
  logic [13:0]       cur_last_reg, cur_last_next;
  logic [7:0]        cur_keep_reg, cur_keep_next;
  logic [7:0]        tkeep_reg, tkeep_next;
  logic              tlast_reg, tlast_next;

  logic [63:0] cycle_reg, cycle_p1_reg;             // cycle_p1_reg == cycle_reg + 1
  logic [31:0] frames_reg, frames_next;
  logic [31:0] late_reg, late_next;

  // Combinational values of the build.
  logic [15:0]  udp_len, ip_len, hdr_word;
  logic [23:0]  ip_sum, udp_sum;
  logic [815:0] frame_be;                            // the 102 header bytes, byte 0 in bits 815:808
  logic [16:0]  frame_bytes;                         // 102 + payload
  logic [15:0]  udp_fold;
  logic         pend_take, tx_done, start;

  assign s_ready = bstate_reg == B_IDLE;
  assign m_axis_tdata = cur_hdr_reg[63:0];
  assign m_axis_tkeep = tkeep_reg;
  assign m_axis_tlast = tlast_reg;
  assign m_axis_tvalid = busy_reg;
  assign cycle = cycle_reg;
  assign frames = frames_reg;
  assign late_frames = late_reg;

  always_comb begin
    bstate_next = bstate_reg;
    d_sched_next = d_sched_reg;
    d_eth_next = d_eth_reg;
    d_ipaddr_next = d_ipaddr_reg;
    d_ports_next = d_ports_reg;
    d_ip_id_next = d_ip_id_reg;
    d_dscp_next = d_dscp_reg;
    d_payload_next = d_payload_reg;
    d_fh_next = d_fh_reg;
    crc_next = crc_reg;
    ip_csum_next = ip_csum_reg;
    udp_csum_next = udp_csum_reg;
    pend_valid_next = pend_valid_reg;
    pend_hdr_next = pend_hdr_reg;
    pend_sched_next = pend_sched_reg;
    pend_last_next = pend_last_reg;
    pend_keep_next = pend_keep_reg;
    busy_next = busy_reg;
    cur_hdr_next = cur_hdr_reg;
    cur_beat_next = cur_beat_reg;
    cur_last_next = cur_last_reg;
    cur_keep_next = cur_keep_reg;
    tkeep_next = tkeep_reg;
    tlast_next = tlast_reg;
    frames_next = frames_reg;
    late_next = late_reg;

    // Lengths and checksums of the frame in the build registers.
    udp_len = 16'd68 + d_payload_reg;               // UDP header 8 + fabemu header 60 + payload
    ip_len = 16'd88 + d_payload_reg;                // + IPv4 header 20
    frame_bytes = 17'd102 + {1'b0, d_payload_reg};
    ip_sum = 24'h4500 + {16'd0, d_dscp_reg, 2'b00} + {8'd0, ip_len} + {8'd0, d_ip_id_reg} + 24'h4000 +
             24'h4011 + {8'd0, d_ipaddr_reg[63:48]} + {8'd0, d_ipaddr_reg[47:32]} +
             {8'd0, d_ipaddr_reg[31:16]} + {8'd0, d_ipaddr_reg[15:0]};
    // Pseudo-header, UDP header (checksum 0) and the fabemu header with its CRC; the payload is zeros.
    udp_sum = {8'd0, d_ipaddr_reg[63:48]} + {8'd0, d_ipaddr_reg[47:32]} + {8'd0, d_ipaddr_reg[31:16]} +
              {8'd0, d_ipaddr_reg[15:0]} + 24'd17 + {8'd0, udp_len} + {8'd0, d_ports_reg[31:16]} +
              {8'd0, d_ports_reg[15:0]} + {8'd0, udp_len} + {8'd0, crc_reg[31:16]} + {8'd0, crc_reg[15:0]};
    for (int j = 0; j < 28; j++) begin
      hdr_word = d_fh_reg[447 - 16 * j -: 16];
      udp_sum = udp_sum + {8'd0, hdr_word};
    end
    udp_fold = ~fold16(udp_sum);
    frame_be = {d_eth_reg,
                8'h45, d_dscp_reg, 2'b00, ip_len, d_ip_id_reg, 16'h4000, 8'd64, 8'd17, ip_csum_reg,
                d_ipaddr_reg,
                d_ports_reg, udp_len, udp_csum_reg,
                d_fh_reg, crc_reg};

    // Build.
    unique case (bstate_reg)
      B_IDLE: if (s_valid) begin
        d_sched_next = s_sched;
        d_eth_next = {s_dst_mac, s_src_mac, 16'h0800};
        d_ipaddr_next = {s_src_ip, s_dst_ip};
        d_ports_next = {s_src_port, s_dst_port};
        d_ip_id_next = s_ip_id;
        d_dscp_next = s_dscp;
        d_payload_next = s_payload_bytes;
        d_fh_next = {32'h4645_4D55, 8'd1, s_kind, s_flags, s_src_rank, s_dst_rank, s_msg_id, s_seq, s_count,
                     s_msg_len, s_offset, s_tx_time};
        bstate_next = B_CRC;
      end
      B_CRC: begin
        crc_next = crc32_56(d_fh_reg);
        bstate_next = B_SUM;
      end
      B_SUM: begin
        ip_csum_next = ~fold16(ip_sum);
        udp_csum_next = udp_fold == 16'd0 ? 16'hFFFF : udp_fold;
        bstate_next = B_DONE;
      end
      default: ;  // B_DONE: below
    endcase

    // Transmit. A frame starts (its header is loaded into cur_hdr, beat 0 presented next cycle) when the
    // stream is free or its last beat leaves now, a frame is pending, and next cycle is its cycle or
    // later.
    tx_done = busy_reg && m_axis_tready && tlast_reg;
    pend_take = 1'b0;
    start = pend_valid_reg && (!busy_reg || tx_done) && pend_sched_reg <= cycle_p1_reg;
    if (busy_reg && m_axis_tready) begin
      if (tlast_reg) begin
        busy_next = 1'b0;
      end else begin
        cur_beat_next = cur_beat_reg + 14'd1;
        cur_hdr_next = {64'd0, cur_hdr_reg[HDR_W-1:64]};  // a shift, not a mux; zeros after the header
        tlast_next = cur_beat_next == cur_last_reg;
        tkeep_next = cur_beat_next == cur_last_reg ? cur_keep_reg : 8'hFF;
      end
    end
    if (start) begin
      pend_take = 1'b1;
      busy_next = 1'b1;
      cur_hdr_next = pend_hdr_reg;
      cur_beat_next = 14'd0;
      cur_last_next = pend_last_reg;
      cur_keep_next = pend_keep_reg;
      tlast_next = 1'b0;                                // frames are at least 13 beats
      tkeep_next = 8'hFF;
      frames_next = frames_reg + 32'd1;
      if (pend_sched_reg != cycle_p1_reg) late_next = late_reg + 32'd1;
    end
    if (pend_take) pend_valid_next = 1'b0;

    // The build writes the pending slot when it is empty or being taken now.
    if (bstate_reg == B_DONE && (!pend_valid_reg || pend_take)) begin
      pend_valid_next = 1'b1;
      for (int i = 0; i < HDR_BYTES; i++) pend_hdr_next[8 * i +: 8] = frame_be[815 - 8 * i -: 8];
      pend_hdr_next[HDR_W-1 -: 16] = 16'd0;             // payload bytes 102 and 103 (or beyond the frame)
      pend_sched_next = d_sched_reg;
      pend_last_next = 14'((frame_bytes - 17'd1) >> 3);
      pend_keep_next = frame_bytes[2:0] == 3'd0 ? 8'hFF : 8'((9'd1 << frame_bytes[2:0]) - 9'd1);
      bstate_next = B_IDLE;
    end
  end

  always_ff @(posedge clk) begin
    bstate_reg <= bstate_next;
    d_sched_reg <= d_sched_next;
    d_eth_reg <= d_eth_next;
    d_ipaddr_reg <= d_ipaddr_next;
    d_ports_reg <= d_ports_next;
    d_ip_id_reg <= d_ip_id_next;
    d_dscp_reg <= d_dscp_next;
    d_payload_reg <= d_payload_next;
    d_fh_reg <= d_fh_next;
    crc_reg <= crc_next;
    ip_csum_reg <= ip_csum_next;
    udp_csum_reg <= udp_csum_next;
    pend_valid_reg <= pend_valid_next;
    pend_hdr_reg <= pend_hdr_next;
    pend_sched_reg <= pend_sched_next;
    pend_last_reg <= pend_last_next;
    pend_keep_reg <= pend_keep_next;
    busy_reg <= busy_next;
    cur_hdr_reg <= cur_hdr_next;
    cur_beat_reg <= cur_beat_next;
    cur_last_reg <= cur_last_next;
    cur_keep_reg <= cur_keep_next;
    tkeep_reg <= tkeep_next;
    tlast_reg <= tlast_next;
    frames_reg <= frames_next;
    late_reg <= late_next;
    cycle_reg <= cycle_p1_reg;
    cycle_p1_reg <= cycle_p1_reg + 64'd1;
    if (rst) begin
      bstate_reg <= B_IDLE;
      pend_valid_reg <= 1'b0;
      busy_reg <= 1'b0;
      tlast_reg <= 1'b0;
      frames_reg <= 32'd0;
      late_reg <= 32'd0;
      cycle_reg <= 64'd0;
      cycle_p1_reg <= 64'd1;
    end
  end

endmodule

`default_nettype wire
