// sched_msg: the message-level scheduler core (issue 46 item 2; hw/sched/doc/sched_msg.md). It runs
// MsgSchedModel (rtl_models/msg_sched_model.h) in RTL: a link table, a route array, per-link FIFOs of
// packets in a pool with a free list, a message table and a min-heap of events keyed by (time, class,
// sequence). Descriptors stream in (valid/ready), the watermark W is a register write, delivery records
// stream out (valid/ready). One event at a time, by a multi-cycle state machine (sched_msg.md gives the
// cycles); every block RAM is read at the address a state sets, the word registered for the next state.
// A message enters its first link's FIFO as one run entry (all its packets, counted), split one packet at
// a time as they leave: the same departures, counters and records as eager segmentation.
`default_nettype none

module sched_msg #(
  parameter int LINK_ADDR_W = 10,  // links: 2^LINK_ADDR_W
  parameter int ROUTE_AW    = 12,  // route array: 2^ROUTE_AW link ids
  parameter int MSG_AW      = 10,  // messages in flight: 2^MSG_AW
  parameter int PKT_AW      = 12   // packet pool: 2^PKT_AW entries
) (
  input  wire logic                   clk,
  input  wire logic                   rst,
  // configuration, stable from reset on
  input  wire logic [31:0]            cfg_mtu,         // >= 1
  input  wire logic [PKT_AW:0]        cfg_pool_slots,  // pool entries used, 1..2^PKT_AW (tests shrink it)
  // link table: one write a cycle while idle, before the first descriptor (clears the link's FIFO and
  // counters)
  input  wire logic                   lt_wr,
  input  wire logic [LINK_ADDR_W-1:0] lt_addr,
  input  wire logic [63:0]            lt_rate,
  input  wire logic [63:0]            lt_latency,
  input  wire logic [63:0]            lt_free,
  // route-link stream: appended to the route array
  input  wire logic                   rt_valid,
  output      logic                   rt_ready,
  input  wire logic [LINK_ADDR_W-1:0] rt_link,
  // descriptor stream (src and dst ranks are the host's: the card does not need them)
  input  wire logic                   d_valid,
  output      logic                   d_ready,
  input  wire logic [63:0]            d_ready_ps,
  input  wire logic [63:0]            d_id,
  input  wire logic [39:0]            d_bytes,
  input  wire logic [7:0]             d_hops,
  input  wire logic [ROUTE_AW-1:0]    d_route,
  input  wire logic [23:0]            d_src,       // ranks: carried to the departures (x_*)
  input  wire logic [23:0]            d_dst,
  // watermark: process every event before it (monotonic; a smaller one is ignored)
  input  wire logic                   wm_wr,
  input  wire logic [63:0]            wm,
  // delivery records
  output      logic                   r_valid,
  input  wire logic                   r_ready,
  output      logic [63:0]            r_id,
  output      logic [63:0]            r_time,
  output      logic [31:0]            r_packets,
  // runs: one per message entering its first link, for the departure expander (sched_msg_dep)
  output      logic                   x_valid,
  input  wire logic                   x_ready,
  output      logic [63:0]            x_id,
  output      logic [23:0]            x_src,
  output      logic [23:0]            x_dst,
  output      logic [39:0]            x_bytes,
  output      logic [39:0]            x_packets,
  output      logic [31:0]            x_lastb,
  output      logic [63:0]            x_start,     // departure of the first packet
  output      logic [63:0]            x_ser,       // ser(MTU) on the first link
  output      logic [63:0]            x_safe,      // every run not yet on x starts at or after this time
  // status
  output      logic [63:0]            known_until,
  output      logic                   idle,       // no event before W, K up to date, nothing in progress
  output      logic                   err_pool,   // sticky: the pool ran out; the core has stopped
  output      logic [63:0]            n_events,
  output      logic [63:0]            n_hops,
  output      logic [63:0]            n_scan,     // cycles spent computing known_until (throughput figures)
  // link counters, read while idle: data two cycles after the address
  input  wire logic [LINK_ADDR_W-1:0] cnt_addr,
  output      logic [63:0]            cnt_bytes,
  output      logic [63:0]            cnt_packets
);

  localparam int LA = LINK_ADDR_W, RA = ROUTE_AW, MA = MSG_AW, PA = PKT_AW;
  localparam int WW = LA > MA ? LA : MA;        // an event's link or message
  localparam int EW = 64 + 1 + 64 + WW;          // heap entry {time, class, sequence, what}
  localparam int HI = WW + 2;                    // heap index: up to 2^LA + 2^MA entries

  typedef enum logic [5:0] {
    S_IDLE, S_HALT, S_HP, S_K,
    S_P_RT, S_P_LA, S_P_ACC, S_P_DIV, S_P_HEAP,
    S_I0, S_I1, S_I2, S_I3, S_I3W, S_IW1, S_IW2, S_IW3, S_I4, S_I5, S_I6, S_I6A, S_IW4, S_I7,
    S_L0, S_L1, S_L2, S_L3, S_LB2, S_FIN,
    S_F0, S_F3
  } state_t;
  state_t st, hp_next;

  // ---- memories: one array per field, all of a table read at one registered address ----------------
  logic [63:0] l_rate [2**LA], l_lat [2**LA], l_free [2**LA], l_cb [2**LA], l_cp [2**LA];
  logic [PA-1:0] l_head [2**LA], l_tail [2**LA];
  logic l_ne [2**LA];
  logic [LA-1:0] route [2**RA];
  logic [63:0] m_id [2**MA], m_suf [2**MA], m_sera [2**MA], m_serb [2**MA];  // ser(MTU), ser(last) on link 1
  logic [39:0] m_bytes [2**MA], m_pk [2**MA];
  logic [31:0] m_lastb [2**MA];
  logic [7:0] m_hops [2**MA];
  logic [RA-1:0] m_route [2**MA];
  logic [23:0] m_src [2**MA], m_dst [2**MA];
  logic [63:0] p_far [2**PA];
  logic [MA-1:0] p_msg [2**PA];
  logic [7:0] p_hop [2**PA];
  logic [39:0] p_cnt [2**PA];
  logic p_last [2**PA];
  logic [31:0] p_bytes [2**PA];
  logic [PA-1:0] p_next [2**PA];
  logic [PA-1:0] fstack [2**PA];   // free pool entries
  logic [MA-1:0] mstack [2**MA];   // free message slots

  // Read addresses: *_n is the address of this cycle (set by the state, else held in *_q); the words are
  // in the read registers (lr_*, rt_rd, mr_*, pr_*) in the next cycle.
  logic [LA-1:0] la_q, la_n;  logic [RA-1:0] ra_q, ra_n;  logic [MA-1:0] ma_q, ma_n;  logic [PA-1:0] pa_q, pa_n;
  logic [63:0] lr_rate, lr_lat, lr_free, lr_cb, lr_cp;
  logic [PA-1:0] lr_head, lr_tail;
  logic lr_ne;
  logic [LA-1:0] rt_rd;
  logic [63:0] mr_id, mr_suf, mr_sera, mr_serb;
  logic [39:0] mr_bytes, mr_pk;
  logic [31:0] mr_lastb;
  logic [7:0] mr_hops;
  logic [RA-1:0] mr_route;
  logic [23:0] mr_src, mr_dst;
  logic [63:0] pr_far;
  logic [MA-1:0] pr_msg;
  logic [7:0] pr_hop;
  logic [39:0] pr_cnt;
  logic pr_last;
  logic [31:0] pr_bytes;
  logic [PA-1:0] pr_next, fs_top;
  logic [MA-1:0] ms_top;
  logic [PA:0] fsp, pfresh;   // free-stack depth; pool entries never used start at pfresh
  logic [MA:0] msp, mfresh;

  always_ff @(posedge clk) begin
    la_q <= la_n; ra_q <= ra_n; ma_q <= ma_n; pa_q <= pa_n;
    lr_rate <= l_rate[la_n]; lr_lat <= l_lat[la_n]; lr_free <= l_free[la_n]; lr_cb <= l_cb[la_n];
    lr_cp <= l_cp[la_n]; lr_head <= l_head[la_n]; lr_tail <= l_tail[la_n]; lr_ne <= l_ne[la_n];
    rt_rd <= route[ra_n];
    mr_id <= m_id[ma_n]; mr_suf <= m_suf[ma_n]; mr_sera <= m_sera[ma_n]; mr_serb <= m_serb[ma_n];
    mr_bytes <= m_bytes[ma_n]; mr_pk <= m_pk[ma_n]; mr_lastb <= m_lastb[ma_n]; mr_hops <= m_hops[ma_n];
    mr_route <= m_route[ma_n];
    mr_src <= m_src[ma_n]; mr_dst <= m_dst[ma_n];
    pr_far <= p_far[pa_n]; pr_msg <= p_msg[pa_n]; pr_hop <= p_hop[pa_n]; pr_cnt <= p_cnt[pa_n];
    pr_last <= p_last[pa_n]; pr_bytes <= p_bytes[pa_n]; pr_next <= p_next[pa_n];
    fs_top <= fstack[PA'(fsp - 1'b1)];
    ms_top <= mstack[MA'(msp - 1'b1)];
  end

  // ---- the event heap, the divider, the shared multiplier -------------------------------------------
  logic          h_push, h_pop, h_ready, h_empty;
  logic [EW-1:0] h_din, h_top;
  sched_msg_heap #(.EW(EW), .HI(HI)) heap (
    .clk, .rst, .push(h_push), .din(h_din), .pop(h_pop), .ready(h_ready), .empty(h_empty), .top(h_top));
  wire logic [63:0] top_time = h_top[EW-1 -: 64];

  logic          div_start, div_done;
  logic [39:0]   div_q;
  logic [31:0]   div_r;
  logic [39:0]   dq_bytes;
  sched_msg_div #(.NW(40), .DW(32)) div (
    .clk, .rst, .start(div_start), .num(dq_bytes), .den(cfg_mtu), .done(div_done), .quot(div_q), .rem(div_r));

  logic          ks_wr, ks_live, ks_start, ks_done;
  logic [MA-1:0] ks_m;
  logic [63:0]   ks_ed, ks_min;
  sched_msg_kscan #(.MA(MA)) kscan (
    .clk, .rst, .wr(ks_wr), .wr_m(ks_m), .wr_live(ks_live), .wr_ed(ks_ed), .start(ks_start), .limit(mfresh),
    .done(ks_done), .kmin(ks_min));

  // The shared multiplier, pipelined: the product of the registers mul_a x mul_b (64 x 40 bits) is in mul_hi and
  // mul_lo 4 cycles after they are written, and stays there while they hold. With mul_c, mul_hi is
  // ser = ceil(product / 2^32) (used with n of 32 bits); without, product[63:0] = {mul_hi[31:0], mul_lo}.
  // M1: eight partial products a_k x b[23:0] (16 x 24) and a_k x b[39:24] (16 x 16), a DSP48E2 each, registered;
  // M2: a_k x b (one 32-bit chain); M3: a[31:0] x b and a[63:32] x b (one 56-bit chain); M4: product[95:32]
  // (one 64-bit chain, the sticky bit of product[31:0] as its carry in).
  logic [63:0]  mul_a;
  logic [39:0]  mul_b;
  logic         mul_c;
  logic [159:0] mp0;       // a_k x b[23:0], 40 bits each
  logic [127:0] mp1;       // a_k x b[39:24], 32 bits each
  logic [223:0] mq;        // a_k x b, 56 bits each
  logic [71:0]  mt_lo;     // a[31:0] x b
  logic [63:0]  mt_hi;     // a[63:32] x b, the bits below 2^96 of the product
  logic [2:0]   mc;        // mul_c along M1..M3
  logic [63:0]  mul_hi;
  logic [31:0]  mul_lo;
  always_ff @(posedge clk) begin
    for (int k = 0; k < 4; k++) begin
      mp0[40*k +: 40] <= 40'(mul_a[16*k +: 16]) * 40'(mul_b[23:0]);
      mp1[32*k +: 32] <= 32'(mul_a[16*k +: 16]) * 32'(mul_b[39:24]);
      mq[56*k +: 56] <= {mp1[32*k +: 32] + 32'(mp0[40*k+24 +: 16]), mp0[40*k +: 24]};
    end
    mt_lo <= {mq[56 +: 56] + 56'(mq[16 +: 40]), mq[0 +: 16]};
    mt_hi <= {48'(mq[168 +: 56] + 56'(mq[128 +: 40])), mq[112 +: 16]};
    mc <= {mc[1:0], mul_c};
    mul_hi <= 64'(mt_lo[71:32]) + mt_hi + {63'd0, mc[2] && mt_lo[31:0] != 32'd0};
    mul_lo <= mt_lo[31:0];
  end

  // ---- registers of the state machine ----------------------------------------------------------------
  logic [63:0] w_q, seq, now, dq_ready, dq_id, tot, ser_a, ser_b, hp_time;
  // Sums prepared before the state that needs them, one adder a cycle (see the inject and forward states):
  logic [63:0] dep, dl, ds, sufn, dsb, dsbl, dsbs, inj_far, cbn, cpn;  // cbn, cpn: the link's new counters
  logic [39:0] nh;        // packet-hops the event adds
  logic [2:0]  fc;        // cycles since S_L3 (saturating at 7): the forward link is read and multiplied meanwhile
  logic        run, cnt2;  // the head entry holds more packets than the one leaving; exactly two
  logic [23:0] dq_src, dq_dst;
  logic [7:0]  dq_hops, h, fwd_hop;
  logic [RA-1:0] dq_route, rlen;
  logic [WW-1:0] what, hp_what;
  logic [MA-1:0] m;
  logic [LA-1:0] l;
  logic [PA-1:0] e, p;
  logic [31:0] fwd_bytes;
  logic fwd_last, fwd;
  logic k_dirty;
  logic [MA:0] unrec;

  wire logic out_free = !r_valid || r_ready;
  wire logic x_free = !x_valid || x_ready;
  wire logic ev_ready = h_ready && !h_empty && top_time < w_q;
  wire logic m_avail = msp != 0 || mfresh[MA] == 1'b0;
  wire logic p_avail = fsp != 0 || pfresh < cfg_pool_slots;
  wire logic [PA-1:0] p_alloc = fsp != 0 ? fs_top : pfresh[PA-1:0];
  wire logic [63:0] depart = now > lr_free ? now : lr_free;
  wire logic [39:0] pk = dq_bytes == 0 ? 40'd1 : div_q + {39'd0, div_r != 0};
  wire logic [31:0] lastb = dq_bytes == 0 ? 32'd0 : div_r != 0 ? div_r : cfg_mtu;
  wire logic [7:0] last_hop = mr_hops - 1'b1;
  wire logic fwd_now = pr_hop != last_hop;  // the leaving packet has links after this one

  assign h_din = st == S_P_HEAP ? {dq_ready, 1'b0, seq, WW'(m)} : {hp_time, 1'b1, seq, hp_what};
  assign h_push = h_ready && (st == S_P_HEAP || st == S_HP);
  assign h_pop = st == S_IDLE && !(d_valid && d_ready) && ev_ready && !err_pool;

  always_comb begin
    la_n = la_q; ra_n = ra_q; ma_n = ma_q; pa_n = pa_q;
    unique case (st)
      S_IDLE: la_n = cnt_addr;                       // the counter port
      S_P_RT: ra_n = dq_route + RA'(h);              // the route's latencies: link id, then latency
      S_P_LA: la_n = rt_rd;
      S_I0: ma_n = MA'(what);                        // inject: message, its first link id, the link
      S_I1: ra_n = mr_route;
      S_I2: la_n = rt_rd;
      S_L0: la_n = LA'(what);                        // leave: link, head entry, its message
      S_L1: pa_n = lr_head;
      S_L2: ma_n = pr_msg;
      S_L3: begin
        if (!run && e != lr_tail) pa_n = pr_next;    // the new head
        ra_n = mr_route + RA'(fwd_hop);              // forward: next link id (the link at fc == 1)
      end
      default: ;
    endcase
    if (fc == 3'd1) la_n = rt_rd;                    // the next link, in any state after S_L3
  end

  // Event arithmetic of S_I7 (inject), S_L3 (a run's next packet) and S_F3 (forward): one adder each, from
  // sums registered in the states before (dep = max(now, link_free), dl = dep + latency, ds = dep + suffix,
  // dsb = dep + ser(last), ...; ks_ed = far end + suffix - latency = departure + ser + suffix).
  wire logic [63:0] big = {mul_hi[31:0], mul_lo};    // (packets - 1) x ser(MTU)
  wire logic [63:0] inj_free = dsb + big;
  wire logic [63:0] run_far = pr_far + (cnt2 ? mr_serb : mr_sera);
  wire logic [63:0] fw_free = dep + mul_hi;
  wire logic [63:0] fw_far = dl + mul_hi;
  wire logic rec_inject = mr_hops == 8'd1;
  wire logic rec_fwd = fwd_last && fwd_hop == last_hop;

  always_ff @(posedge clk) begin
    if (rt_valid && rt_ready) route[rlen] <= rt_link;
    if (rst) begin
      st <= S_IDLE;
      rt_ready <= 1'b0; d_ready <= 1'b0; r_valid <= 1'b0; idle <= 1'b0; err_pool <= 1'b0;
      x_valid <= 1'b0; x_safe <= '0;
      w_q <= '0; seq <= '0; rlen <= '0; fsp <= '0; pfresh <= '0; msp <= '0; mfresh <= '0;
      known_until <= '1; k_dirty <= 1'b0; unrec <= '0; n_events <= '0; n_hops <= '0; n_scan <= '0; fc <= '0;
      div_start <= 1'b0; ks_start <= 1'b0; ks_wr <= 1'b0;
    end else begin
      rt_ready <= 1'b1;
      if (rt_valid && rt_ready) rlen <= rlen + 1'b1;
      if (wm_wr && wm > w_q) w_q <= wm;
      if (r_valid && r_ready) r_valid <= 1'b0;
      if (x_valid && x_ready) x_valid <= 1'b0;
      div_start <= 1'b0; ks_start <= 1'b0; ks_wr <= 1'b0;
      // The forward link (read at fc == 1): ser of the packet on it, and the sums of S_F3.
      if (fc != 3'd0 && fc != 3'd7) fc <= fc + 1'b1;
      if (fc == 3'd2) begin mul_a <= lr_rate; mul_b <= 40'(fwd_bytes); mul_c <= 1'b1; dep <= depart; end
      if (fc == 3'd3) begin
        dl <= dep + lr_lat; ds <= dep + mr_suf; sufn <= mr_suf - lr_lat;
        cbn <= lr_cb + 64'(fwd_bytes); cpn <= lr_cp + 1'b1; nh <= 40'd1;
      end
      d_ready <= 1'b0;
      idle <= 1'b0;
      cnt_bytes <= lr_cb;
      cnt_packets <= lr_cp;
      unique case (st)
        S_IDLE: begin
          // The link table is written in this state only, so that each link array has one write port
          // (its writes are exclusive by state) and maps to block RAM.
          if (lt_wr) begin
            l_rate[lt_addr] <= lt_rate; l_lat[lt_addr] <= lt_latency; l_free[lt_addr] <= lt_free;
            l_ne[lt_addr] <= 1'b0; l_cb[lt_addr] <= '0; l_cp[lt_addr] <= '0;
          end
          if (err_pool) st <= S_HALT;
          else if (d_valid && d_ready) begin
            dq_ready <= d_ready_ps; dq_id <= d_id; dq_bytes <= d_bytes; dq_hops <= d_hops; dq_route <= d_route;
            dq_src <= d_src; dq_dst <= d_dst;
            div_start <= 1'b1; h <= '0; tot <= '0; k_dirty <= 1'b1;
            st <= S_P_RT;
          end else if (ev_ready) begin
            now <= top_time; what <= h_top[WW-1:0]; n_events <= n_events + 1'b1; k_dirty <= 1'b1;
            x_safe <= top_time;  // events come in time order: a later run starts at or after it
            st <= h_top[EW-65] ? S_L0 : S_I0;
          end else if (k_dirty && h_ready && !(d_valid && m_avail)) begin  // after the events and descriptors
            if (unrec == 0) begin
              known_until <= '1; k_dirty <= 1'b0;
            end else begin
              ks_start <= 1'b1; st <= S_K;
            end
          end else begin
            d_ready <= m_avail && !(d_valid && d_ready);
            if (h_ready) x_safe <= w_q;  // every event before W has run (and put its run on x)
            idle <= h_ready && !wm_wr && !k_dirty;
          end
        end
        S_HALT: ;
        S_K: begin  // known_until: sched_msg_kscan's least ed of the messages whose record is not out
          n_scan <= n_scan + 1'b1;
          if (ks_done) begin
            known_until <= ks_min; k_dirty <= 1'b0; st <= S_IDLE;
          end
        end
        S_HP: if (h_ready) begin seq <= seq + 1'b1; st <= hp_next; end
        // ---- a descriptor: the route's latencies, the packet count, a message slot, a class-0 event ----
        S_P_RT: st <= S_P_LA;
        S_P_LA: st <= S_P_ACC;
        S_P_ACC: begin
          tot <= tot + lr_lat; h <= h + 1'b1;
          st <= h + 1'b1 == dq_hops ? S_P_DIV : S_P_RT;
        end
        S_P_DIV: if (div_done) begin
          m <= msp != 0 ? ms_top : mfresh[MA-1:0];
          if (msp != 0) msp <= msp - 1'b1; else mfresh <= mfresh + 1'b1;
          st <= S_P_HEAP;
        end
        S_P_HEAP: if (h_ready) begin
          m_id[m] <= dq_id; m_bytes[m] <= dq_bytes; m_hops[m] <= dq_hops; m_route[m] <= dq_route;
          m_pk[m] <= pk; m_lastb[m] <= lastb; m_suf[m] <= tot; m_src[m] <= dq_src; m_dst[m] <= dq_dst;
          ks_wr <= 1'b1; ks_m <= m; ks_live <= 1'b1; ks_ed <= dq_ready + tot;
          unrec <= unrec + 1'b1; seq <= seq + 1'b1; st <= S_IDLE;
        end
        // ---- class 0: the message enters its first link as one run of all its packets ----
        S_I0: begin m <= MA'(what); st <= S_I1; end
        S_I1: st <= S_I2;
        S_I2: begin l <= rt_rd; st <= S_I3; end
        S_I3: begin mul_a <= lr_rate; mul_b <= 40'(cfg_mtu); mul_c <= 1'b1; dep <= depart; st <= S_I3W; end
        S_I3W: begin
          mul_b <= 40'(mr_lastb); dl <= dep + lr_lat; sufn <= mr_suf - lr_lat;
          cbn <= lr_cb + 64'(mr_bytes); cpn <= lr_cp + 64'(mr_pk); nh <= mr_pk;
          st <= S_IW1;
        end
        S_IW1: st <= S_IW2;
        S_IW2: st <= S_IW3;
        S_IW3: st <= S_I4;
        S_I4: begin ser_a <= mul_hi; mul_a <= mul_hi; mul_b <= mr_pk - 1'b1; mul_c <= 1'b0; st <= S_I5; end
        S_I5: begin ser_b <= mul_hi; st <= S_I6; end
        S_I6: begin dsb <= dep + ser_b; inj_far <= dl + (mr_pk == 40'd1 ? ser_b : ser_a); st <= S_I6A; end
        S_I6A: begin dsbl <= dsb + lr_lat; dsbs <= dsb + mr_suf; st <= S_IW4; end
        S_IW4: st <= S_I7;  // big (ser(MTU) x (packets - 1)) is in mul_hi, mul_lo from here
        S_I7: begin
          if (!p_avail) begin
            err_pool <= 1'b1; st <= S_HALT;
          end else if ((!rec_inject || out_free) && x_free) begin
            x_valid <= 1'b1; x_id <= mr_id; x_src <= mr_src; x_dst <= mr_dst; x_bytes <= mr_bytes;
            x_packets <= mr_pk; x_lastb <= mr_lastb; x_start <= dep; x_ser <= ser_a;
            e <= p_alloc;
            if (fsp != 0) fsp <= fsp - 1'b1; else pfresh <= pfresh + 1'b1;
            p_far[p_alloc] <= inj_far; p_msg[p_alloc] <= m; p_hop[p_alloc] <= '0; p_cnt[p_alloc] <= mr_pk;
            p_last[p_alloc] <= 1'b1; p_bytes[p_alloc] <= mr_lastb;
            m_sera[m] <= ser_a; m_serb[m] <= ser_b;
            l_free[l] <= inj_free; l_cb[l] <= cbn; l_cp[l] <= cpn; l_tail[l] <= p_alloc;
            n_hops <= n_hops + 64'(nh);
            if (rec_inject) begin
              r_valid <= 1'b1; r_id <= mr_id; r_time <= dsbl + big; r_packets <= mr_pk[31:0];
              ks_wr <= 1'b1; ks_m <= m; ks_live <= 1'b0; unrec <= unrec - 1'b1;
            end else begin
              m_suf[m] <= sufn;
              ks_wr <= 1'b1; ks_m <= m; ks_live <= 1'b1; ks_ed <= dsbs + big;
            end
            if (lr_ne) begin
              p_next[lr_tail] <= p_alloc;
              st <= S_IDLE;
            end else begin
              l_head[l] <= p_alloc; l_ne[l] <= 1'b1;
              hp_time <= inj_far; hp_what <= WW'(l); hp_next <= S_IDLE; st <= S_HP;
            end
          end
        end
        // ---- class 1: link l's head packet reaches the far end ----
        S_L0: begin l <= LA'(what); st <= S_L1; end
        S_L1: begin e <= lr_head; st <= S_L2; end
        S_L2: begin
          m <= pr_msg; fwd_hop <= pr_hop + 1'b1; run <= pr_cnt != 40'd1; cnt2 <= pr_cnt == 40'd2;
          st <= S_L3;
        end
        S_L3: begin
          fwd <= fwd_now;
          fwd_bytes <= run ? cfg_mtu : pr_bytes;
          fwd_last <= !run && pr_last;
          fc <= 3'd1;
          if (run) begin  // the run stays at the head, one packet shorter: its next packet's far end (+ ser of
            // the run's link, kept with its message at the inject)
            p_far[e] <= run_far; p_cnt[e] <= pr_cnt - 1'b1;
            hp_time <= run_far; hp_what <= WW'(l); hp_next <= fwd_now ? S_F0 : S_IDLE; st <= S_HP;
            if (fwd_now) begin  // the packet leaving the run takes a pool entry of its own
              if (!p_avail) begin
                err_pool <= 1'b1; st <= S_HALT;
              end else begin
                p <= p_alloc;
                if (fsp != 0) fsp <= fsp - 1'b1; else pfresh <= pfresh + 1'b1;
              end
            end
          end else begin
            p <= e;
            if (e == lr_tail) begin
              l_ne[l] <= 1'b0;
              st <= fwd_now ? S_F0 : S_FIN;
            end else begin
              l_head[l] <= pr_next; st <= S_LB2;  // the new head's far end: pa_n = pr_next
            end
          end
        end
        S_LB2: begin hp_time <= pr_far; hp_what <= WW'(l); hp_next <= fwd ? S_F0 : S_FIN; st <= S_HP; end
        S_FIN: begin  // the packet is through: its entry back to the free list, its message too if last
          fstack[fsp[PA-1:0]] <= e; fsp <= fsp + 1'b1;
          if (fwd_last) begin
            mstack[msp[MA-1:0]] <= m; msp <= msp + 1'b1;  // its record is out: not live
          end
          st <= S_IDLE;
        end
        // ---- the packet enters the next link of its route ----
        S_F0: if (fc >= 3'd6) begin l <= rt_rd; st <= S_F3; end  // ser on the next link is in mul_hi from fc 7
        S_F3: if (!rec_fwd || out_free) begin
          p_far[p] <= fw_far; p_msg[p] <= m; p_hop[p] <= fwd_hop; p_cnt[p] <= 40'd1; p_last[p] <= fwd_last;
          p_bytes[p] <= fwd_bytes;
          l_free[l] <= fw_free; l_cb[l] <= cbn; l_cp[l] <= cpn; l_tail[l] <= p;
          n_hops <= n_hops + 64'(nh);
          if (rec_fwd) begin
            r_valid <= 1'b1; r_id <= mr_id; r_time <= fw_far; r_packets <= mr_pk[31:0];
            ks_wr <= 1'b1; ks_m <= m; ks_live <= 1'b0; unrec <= unrec - 1'b1;
          end else if (fwd_last) begin
            m_suf[m] <= sufn;
            ks_wr <= 1'b1; ks_m <= m; ks_live <= 1'b1; ks_ed <= ds + mul_hi;
          end
          if (lr_ne) begin
            p_next[lr_tail] <= p;
            st <= S_IDLE;
          end else begin
            l_head[l] <= p; l_ne[l] <= 1'b1;
            hp_time <= fw_far; hp_what <= WW'(l); hp_next <= S_IDLE; st <= S_HP;
          end
        end
        default: ;
      endcase
    end
  end

endmodule

`default_nettype wire
