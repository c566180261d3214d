// sched_msg_dep: the departure expander behind sched_msg (issue 46 item 5; hw/sched/doc/sched_msg_dep.md).
// sched_msg hands it one *run* per message entering its first link (start = the first packet's departure,
// ser = ser(MTU), the packet count, the last packet's bytes); it puts out one departure per packet, in the
// order (departure time, run sequence): packet k of a run departs at start + k * ser. A run table (block
// RAM, one write port: written once per run) and a min-heap of {time, sequence, packet, offset, slot}
// (sched_msg_heap) merge the runs of all links; the run being emitted sits in registers and gives one
// departure per cycle while it stays the minimum. Departures go out only below the bound sched_msg
// guarantees (`safe`: no run still to come starts before it; a run waiting on the input bounds it too).
`default_nettype none

module sched_msg_dep #(
  parameter int SA = 12  // run slots: 2^SA (sched_msg's message slots: a run belongs to a live message)
) (
  input  wire logic        clk,
  input  wire logic        rst,
  input  wire logic [31:0] cfg_mtu,
  // runs, from sched_msg (valid/ready; x_ready is a register)
  input  wire logic        x_valid,
  output      logic        x_ready,
  input  wire logic [63:0] x_id,
  input  wire logic [23:0] x_src, x_dst,
  input  wire logic [39:0] x_bytes,     // the message's bytes
  input  wire logic [39:0] x_packets,   // >= 1
  input  wire logic [31:0] x_lastb,     // bytes of the last packet
  input  wire logic [63:0] x_start,     // departure of packet 0 (ps)
  input  wire logic [63:0] x_ser,       // ser(MTU) on the first link (ps)
  input  wire logic [63:0] safe,        // every run not yet on x starts at or after this time
  // departures (valid/ready, from one output register)
  output      logic        o_valid,
  input  wire logic        o_ready,
  output      logic [63:0] o_time,      // departure (ps)
  output      logic [63:0] o_id,
  output      logic [23:0] o_src, o_dst,
  output      logic [39:0] o_seq,       // packet index in the message
  output      logic [39:0] o_count,     // packets of the message
  output      logic [31:0] o_bytes,     // payload bytes of this packet
  output      logic [39:0] o_msg_len,
  output      logic [63:0] o_offset,    // seq * MTU
  // status
  output      logic        idle,        // nothing to emit below the bound, no run in progress
  output      logic [63:0] n_runs,
  output      logic [63:0] n_deps
);

  localparam int QW = 48;                       // run sequence
  localparam int EW = 64 + QW + 40 + 64 + SA;   // heap entry {time, sequence, packet, offset, slot}
  localparam int HI = SA + 1;

  typedef enum logic [2:0] {E_IDLE, E_PUSH, E_SWAP, E_LOAD} state_t;
  state_t st;

  // ---- the run table: static fields, written once per run at its slot ----
  logic [63:0] t_id [2**SA], t_ser [2**SA];
  logic [23:0] t_src [2**SA], t_dst [2**SA];
  logic [39:0] t_bytes [2**SA], t_pk [2**SA];
  logic [31:0] t_lastb [2**SA];
  logic [SA-1:0] fstack [2**SA];
  logic [SA:0] fsp, fresh;
  logic [SA-1:0] ra_n, fs_top;
  logic [63:0] tr_id, tr_ser;
  logic [23:0] tr_src, tr_dst;
  logic [39:0] tr_bytes, tr_pk;
  logic [31:0] tr_lastb;

  // ---- the heap ----
  logic          h_push, h_pop, h_ready, h_empty;
  logic [EW-1:0] h_din, h_top;
  sched_msg_heap #(.EW(EW), .HI(HI)) heap (
    .clk, .rst, .push(h_push), .din(h_din), .pop(h_pop), .ready(h_ready), .empty(h_empty), .top(h_top));
  wire logic [63:0] top_time = h_top[EW-1 -: 64];
  wire logic [SA-1:0] top_slot = h_top[SA-1:0];

  // ---- the run in emission (registers) ----
  logic          cur;
  logic [63:0]   c_time, c_off, c_id, c_ser;
  logic [QW-1:0] c_seq;
  logic [39:0]   c_k, c_pk, c_bytes;
  logic [23:0]   c_src, c_dst;
  logic [31:0]   c_lastb;
  logic [SA-1:0] c_slot;
  // ---- the accepted run, before its push ----
  logic [63:0]   a_start;
  logic [SA-1:0] a_slot;
  logic [QW-1:0] rseq;

  // a < b on the heap's entries: the halves' compares in parallel, as in sched_msg_heap (`lt`): chains of
  // 10 CARRY4 side by side, not one of 19.
  localparam int LO = EW / 2;
  function automatic logic key_lt(input logic [EW-1:0] a, input logic [EW-1:0] b);
    key_lt = a[EW-1:LO] < b[EW-1:LO] || (!(~a[EW-1:LO] < ~b[EW-1:LO]) && a[LO-1:0] < b[LO-1:0]);
  endfunction

  wire logic [EW-1:0] c_key = {c_time, c_seq, c_k, c_off, c_slot};
  wire logic avail = fsp != 0 || fresh[SA] == 1'b0;
  wire logic [SA-1:0] s_alloc = fsp != 0 ? fs_top : fresh[SA-1:0];
  // No run still to come departs before the bound x_valid ? min(x_start, safe) : safe (sched_msg's, or the run
  // waiting on the input). A time t is below it when t < safe && !(x_valid && t >= x_start): two compares side
  // by side, not the compare that picks the bound and then the compare with it.
  function automatic logic below_bound(input logic [63:0] t, input logic [63:0] sf, input logic xv,
                                       input logic [63:0] xs);
    below_bound = t < sf && !(xv && !(t < xs));
  endfunction
  wire logic out_free = !o_valid || o_ready;
  wire logic top_ok = h_ready && !h_empty && below_bound(top_time, safe, x_valid, x_start);
  wire logic c_below = below_bound(c_time, safe, x_valid, x_start);
  wire logic c_first = !h_empty && key_lt(h_top, c_key);   // with h_ready: the heap has an earlier departure
  // A waiting run is taken first when there is a slot for it; without one, the table drains below the bound.
  wire logic take = x_valid && (x_ready || avail);
  wire logic emit = st == E_IDLE && !take && cur && h_ready && !c_first && c_below && out_free;
  wire logic swap = st == E_IDLE && !take && cur && top_ok && c_first;
  wire logic load = st == E_IDLE && !take && !cur && top_ok;
  wire logic c_last = c_k + 1'b1 == c_pk;

  assign h_push = h_ready && (st == E_PUSH || st == E_SWAP);
  assign h_din = st == E_PUSH ? {a_start, rseq, 40'd0, 64'd0, a_slot} : c_key;
  assign h_pop = load;
  assign ra_n = top_slot;

  always_ff @(posedge clk) begin
    tr_id <= t_id[ra_n]; tr_ser <= t_ser[ra_n]; tr_src <= t_src[ra_n]; tr_dst <= t_dst[ra_n];
    tr_bytes <= t_bytes[ra_n]; tr_pk <= t_pk[ra_n]; tr_lastb <= t_lastb[ra_n];
    fs_top <= fstack[SA'(fsp - 1'b1)];
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      st <= E_IDLE;
      x_ready <= 1'b0; o_valid <= 1'b0; cur <= 1'b0; idle <= 1'b0;
      fsp <= '0; fresh <= '0; rseq <= '0; n_runs <= '0; n_deps <= '0;
    end else begin
      if (o_valid && o_ready) o_valid <= 1'b0;
      x_ready <= 1'b0;
      idle <= 1'b0;
      unique case (st)
        E_IDLE: begin
          if (take) begin  // x_ready is high one cycle after `avail` was: the free stack's top is read by then
            if (x_ready) begin
              t_id[s_alloc] <= x_id; t_ser[s_alloc] <= x_ser; t_src[s_alloc] <= x_src; t_dst[s_alloc] <= x_dst;
              t_bytes[s_alloc] <= x_bytes; t_pk[s_alloc] <= x_packets; t_lastb[s_alloc] <= x_lastb;
              a_start <= x_start; a_slot <= s_alloc;
              if (fsp != 0) fsp <= fsp - 1'b1; else fresh <= fresh + 1'b1;
              st <= E_PUSH;
            end else begin
              x_ready <= 1'b1;
            end
          end else if (emit) begin
            o_valid <= 1'b1;
            o_time <= c_time; o_id <= c_id; o_src <= c_src; o_dst <= c_dst; o_seq <= c_k; o_count <= c_pk;
            o_bytes <= c_last ? c_lastb : cfg_mtu; o_msg_len <= c_bytes; o_offset <= c_off;
            n_deps <= n_deps + 1'b1;
            c_k <= c_k + 1'b1; c_time <= c_time + c_ser; c_off <= c_off + 64'(cfg_mtu);
            if (c_last) begin
              cur <= 1'b0;
              fstack[fsp[SA-1:0]] <= c_slot; fsp <= fsp + 1'b1;
            end
          end else if (swap) begin
            st <= E_SWAP;
          end else if (load) begin
            {c_time, c_seq, c_k, c_off, c_slot} <= h_top;
            st <= E_LOAD;
          end else begin
            idle <= !x_valid && h_ready && !o_valid && !(cur && c_below) && !top_ok;
          end
        end
        E_PUSH: if (h_ready) begin
          rseq <= rseq + 1'b1; n_runs <= n_runs + 1'b1; st <= E_IDLE;
        end
        E_SWAP: if (h_ready) begin
          cur <= 1'b0; st <= E_IDLE;
        end
        E_LOAD: begin
          c_id <= tr_id; c_ser <= tr_ser; c_src <= tr_src; c_dst <= tr_dst; c_bytes <= tr_bytes; c_pk <= tr_pk;
          c_lastb <= tr_lastb; cur <= 1'b1; st <= E_IDLE;
        end
        default: ;
      endcase
    end
  end

endmodule

`default_nettype wire
