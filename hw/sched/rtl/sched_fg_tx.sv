// Frame generator, transmit clock domain: the pacing gate and the beat emitter. The FIFO's oldest
// frame waits in the pending slot (f_pop, the FIFO's read request, is combinational from f_empty as a
// FIFO handshake is; hw/check_comb_paths.sh checks sched_fg, inside which it stays). It starts (its
// first beat is registered) at the edge where the stream is free (idle, or the current frame's last
// beat transfers at that edge) and its scheduled cycle is the next one (pend_sched <= cycle + 1), so
// on time its first beat is presented in exactly cycle == pend_sched, and never earlier. A start after
// that counts in late_frames. Beats: the header bytes shift out of a register (DATA_W bits per beat,
// zeros after them: the payload), the ICRC's bytes are ORed into their lanes of the last beat (and of
// the one before when it straddles them).
`default_nettype none

module sched_fg_tx #(
  parameter int DATA_W = 512,
  parameter int HDR_W  = 1024                  // header beats * DATA_W (at least the 912 header bits)
) (
  input  wire logic              clk,
  input  wire logic              rst,
  // FIFO read side.
  input  wire logic              f_empty,
  output      logic              f_pop,
  input  wire logic [911:0]      f_img,
  input  wire logic [63:0]       f_sched,
  input  wire logic [13:0]       f_nbm1,
  input  wire logic [DATA_W/8-1:0] f_keep, f_icrc_last, f_icrc_pen,
  input  wire logic [31:0]       f_icrc,
  // AXI4-Stream master.
  output      logic [DATA_W-1:0] m_axis_tdata,
  output      logic [DATA_W/8-1:0] m_axis_tkeep,
  output      logic              m_axis_tlast,
  output      logic              m_axis_tvalid,
  input  wire logic              m_axis_tready,
  // Status (this clock domain).
  output      logic [63:0]       cycle,
  output      logic [31:0]       frames,
  output      logic [31:0]       late_frames
);

  localparam int KW = DATA_W / 8;

  // Pending slot: the next frame, as it came out of the FIFO.
  logic              pend_valid;
  logic [HDR_W-1:0]  pend_hdr;
  logic [63:0]       pend_sched;
  logic [13:0]       pend_nbm1;
  logic [KW-1:0]     pend_keep, pend_last, pend_pen;
  logic [31:0]       pend_icrc;

  // The frame on the wire: the beat in tdata is hdr[DATA_W-1:0] (plus ICRC lanes); `left` beats follow.
  logic              busy, is_last, is_pen;
  logic [HDR_W-1:0]  hdr;
  logic [13:0]       left;
  logic [KW-1:0]     keep, last_en, pen_en;
  logic [31:0]       icrc;

  logic [63:0] cycle_reg, cycle_p1;            // cycle_p1 == cycle_reg + 1
  logic        start, xfer;

  assign xfer = busy && m_axis_tready;
  assign start = pend_valid && (!busy || (m_axis_tready && is_last)) && pend_sched <= cycle_p1;
  // The slot is refilled in the cycle after it empties (frames are at least 2 beats, so the next one
  // is there by the time the stream can take it), which keeps tready out of the FIFO's read side.
  assign f_pop = !f_empty && !pend_valid;

  // Outputs: functions of registers only.
  always_comb begin
    m_axis_tdata = hdr[DATA_W-1:0];
    for (int j = 0; j < KW; j++) begin
      // The ICRC starts 2 bytes past a multiple of 4 (a RoCEv2 frame is 118 + 4k bytes), so lane j
      // can only ever hold ICRC byte (j + 2) mod 4.
      if ((is_last && last_en[j]) || (is_pen && pen_en[j])) m_axis_tdata[8 * j +: 8] |= icrc[8 * ((j + 2) % 4) +: 8];
    end
  end
  assign m_axis_tkeep = is_last ? keep : '1;
  assign m_axis_tlast = is_last;
  assign m_axis_tvalid = busy;
  assign cycle = cycle_reg;

  always_ff @(posedge clk) begin
    if (f_pop) begin
      pend_hdr <= HDR_W'(f_img);
      pend_sched <= f_sched;
      pend_nbm1 <= f_nbm1;
      pend_keep <= f_keep;
      pend_last <= f_icrc_last;
      pend_pen <= f_icrc_pen;
      pend_icrc <= f_icrc;
    end
    if (f_pop) pend_valid <= 1'b1;
    else if (start) pend_valid <= 1'b0;

    if (xfer) begin
      if (is_last) begin
        busy <= 1'b0;
      end else begin
        hdr <= {DATA_W'(0), hdr[HDR_W-1:DATA_W]};
        left <= left - 14'd1;
        is_last <= left == 14'd1;
        is_pen <= left == 14'd2;
      end
    end
    if (start) begin
      busy <= 1'b1;
      hdr <= pend_hdr;
      left <= pend_nbm1;
      is_last <= pend_nbm1 == 14'd0;
      is_pen <= pend_nbm1 == 14'd1;
      keep <= pend_keep;
      last_en <= pend_last;
      pen_en <= pend_pen;
      icrc <= pend_icrc;
      frames <= frames + 32'd1;
      if (pend_sched != cycle_p1) late_frames <= late_frames + 32'd1;
    end
    cycle_reg <= cycle_p1;
    cycle_p1 <= cycle_p1 + 64'd1;
    if (rst) begin
      pend_valid <= 1'b0;
      busy <= 1'b0;
      is_last <= 1'b0;
      is_pen <= 1'b0;
      frames <= '0;
      late_frames <= '0;
      cycle_reg <= '0;
      cycle_p1 <= 64'd1;
    end
  end

endmodule

`default_nettype wire
