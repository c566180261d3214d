// Binary min-heap of sched_msg's events in block RAM: entries are compared whole as unsigned numbers, so
// with the key {time, class, sequence} in the top bits (the sequence unique) the minimum is the next event in
// MsgSchedModel's order. One operation at a time (push or pop); `ready` is high between operations and
// `top` (the minimum, registered) is valid whenever ready && !empty. Node j (1-based) lives in lane j[1:0]
// at word j >> 2 of four RAMs, so the four grandchildren of node i are word i of the four lanes: on the
// way down, the read of the next level's children does not wait for this level's compare (one cycle per
// level). Push sifts up (two cycles per level climbed), pop sifts the last entry down (one per level), comparing
// the entry with both children and the children with each other at once. Entries wider than 180 bits (the
// departure expander's 228) compare in halves (see `lt`) and against the four lanes of a read word at once.
`default_nettype none

module sched_msg_heap #(
  parameter int EW = 140,  // entry width, bits
  parameter int HI = 12    // index width: holds up to 2^HI - 1 entries (HI >= 3)
) (
  input  wire logic          clk,
  input  wire logic          rst,
  input  wire logic          push,    // with ready: insert `din`
  input  wire logic [EW-1:0] din,
  input  wire logic          pop,     // with ready and !empty: remove `top` (push has priority; never both)
  output      logic          ready,
  output      logic          empty,
  output      logic [EW-1:0] top
);

  localparam int WA = HI - 2;
  typedef enum logic [2:0] {H_IDLE, H_UP, H_UP_CMP, H_LAST, H_DOWN} hstate_t;

  logic [4*EW-1:0] rd;           // registered reads of the four lanes (lane k at bits EW*k)
  logic [EW-1:0]   x;            // the entry being placed
  logic [HI-1:0]   i;            // its current node
  logic [HI-1:0]   size;         // entries
  logic [1:0]      last_lane;    // the last node before a pop
  hstate_t st;

  // Writes: one node a cycle, in its lane. Reads: one word a cycle, all four lanes.
  logic          we;
  logic [HI-1:0] wnode;
  logic [EW-1:0] wdata;
  logic          re;
  logic [WA-1:0] raddr;

  genvar k;
  generate
    for (k = 0; k < 4; k = k + 1) begin : g_lane
      (* ram_style = "block" *) logic [EW-1:0] mem [2**WA];
      always_ff @(posedge clk) begin
        if (we && wnode[1:0] == k) mem[wnode[HI-1:2]] <= wdata;
        if (re) rd[EW*k +: EW] <= mem[raddr];
      end
    end
  endgenerate

  // a < b. Wide entries: the halves' compares in parallel (a_hi < b_hi, or a_hi <= b_hi and a_lo < b_lo), each
  // a carry chain of half the length (yosys maps a compare to one chain of 3 bits a LUT: 228 bits would be 19
  // CARRY4, above the 16 of the 300 MHz budget). `a_hi <= b_hi` is written `!(~a_hi < ~b_hi)`: a compare of its
  // own, not yosys's `a_hi == b_hi` LUT tree behind the shared chain. The same result as `a < b`.
  localparam bit WIDE = EW > 180;
  localparam int LO = EW / 2;
  function automatic logic lt(input logic [EW-1:0] a, input logic [EW-1:0] b);
    if (WIDE)
      lt = a[EW-1:LO] < b[EW-1:LO] || (!(~a[EW-1:LO] < ~b[EW-1:LO]) && a[LO-1:0] < b[LO-1:0]);
    else
      lt = a < b;
  endfunction

  wire logic [HI-1:0] parent = i >> 1;
  wire logic [HI-1:0] child  = {i[HI-2:0], 1'b0};
  // Node i's children are in the word read last (word i >> 1), lanes 0 and 1 (i even) or 2 and 3 (i odd).
  wire logic [EW-1:0] c0 = i[0] ? rd[2*EW +: EW] : rd[0 +: EW];
  wire logic [EW-1:0] c1 = i[0] ? rd[3*EW +: EW] : rd[EW +: EW];
  wire logic          has_child = child != 0 && child <= size;
  wire logic          has_right = child + 1'b1 <= size;
  // The three compares in parallel (the children with each other, each child with the entry), not the least
  // child first and then it with the entry: one compare chain on the way down. Wide entries: each lane pair's
  // compares and each lane's with the entry, selected by i[0] after the compare (no lane mux before the chain).
  wire logic          lt10, lt0x, lt1x, up_lt;  // up_lt: the entry < its parent (sift-up)
  // The lane muxes as 4:1 muxes (a LUT6 a bit): `rd[EW*lane +: EW]` is a shifter to yosys (LUTs and three
  // MUXF levels; most of the 7,300 LUTs sched_msg_dep lost with these muxes).
  function automatic logic [EW-1:0] lane(input logic [4*EW-1:0] w, input logic [1:0] l);
    unique case (l)
      2'd0: lane = w[0 +: EW];
      2'd1: lane = w[EW +: EW];
      2'd2: lane = w[2*EW +: EW];
      default: lane = w[3*EW +: EW];
    endcase
  endfunction
  wire logic [EW-1:0] pval = lane(rd, parent[1:0]);
  generate
    if (WIDE) begin : g_wide
      wire logic [3:0] lane_lt_x, x_lt_lane;   // lane k < x, x < lane k
      for (k = 0; k < 4; k = k + 1) begin : g_cmp
        assign lane_lt_x[k] = lt(rd[EW*k +: EW], x);
        assign x_lt_lane[k] = lt(x, rd[EW*k +: EW]);
      end
      wire logic lt32 = lt(rd[3*EW +: EW], rd[2*EW +: EW]);
      wire logic lt10_even = lt(rd[EW +: EW], rd[0 +: EW]);
      assign lt10 = i[0] ? lt32 : lt10_even;
      assign lt0x = i[0] ? lane_lt_x[2] : lane_lt_x[0];
      assign lt1x = i[0] ? lane_lt_x[3] : lane_lt_x[1];
      assign up_lt = x_lt_lane[parent[1:0]];
    end else begin : g_narrow
      assign lt10 = lt(c1, c0);
      assign lt0x = lt(c0, x);
      assign lt1x = lt(c1, x);
      assign up_lt = lt(x, pval);
    end
  endgenerate
  wire logic          right_less = has_right && lt10;
  wire logic [EW-1:0] least = right_less ? c1 : c0;
  wire logic          descend = has_child && (right_less ? lt1x : lt0x);
  wire logic [EW-1:0] last_val = lane(rd, last_lane);

  always_comb begin
    we = 1'b0;
    wnode = i;
    wdata = x;
    re = 1'b0;
    raddr = parent[WA+1:2];
    unique case (st)
      H_IDLE: begin
        raddr = size[WA+1:2];           // a pop reads the last node
        re = ready && !push && pop && !empty && size != 1;
      end
      H_UP: begin
        if (i == 1) we = 1'b1;
        else re = 1'b1;
      end
      H_UP_CMP: begin
        we = 1'b1;
        if (up_lt) wdata = pval;
      end
      H_LAST: begin                     // the root's children: word 0
        re = 1'b1;
        raddr = '0;
      end
      H_DOWN: begin
        we = 1'b1;
        if (descend) begin
          wdata = least;
          re = 1'b1;                    // the grandchildren: word i (truncated: beyond size, unused)
          raddr = i[WA-1:0];
        end
      end
      default: ;
    endcase
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      st <= H_IDLE;
      size <= '0;
      ready <= 1'b0;
      empty <= 1'b1;
      i <= '0;
      last_lane <= '0;
    end else begin
      if (we && wnode == 1) top <= wdata;
      unique case (st)
        H_IDLE: begin
          ready <= 1'b1;
          if (ready && push) begin
            x <= din;
            i <= size + 1'b1;
            size <= size + 1'b1;
            empty <= 1'b0;
            ready <= 1'b0;
            st <= H_UP;
          end else if (ready && pop && !empty) begin
            size <= size - 1'b1;
            ready <= 1'b0;
            if (size == 1) begin
              empty <= 1'b1;
              st <= H_IDLE;
            end else begin
              last_lane <= size[1:0];
              st <= H_LAST;
            end
          end
        end
        H_UP: st <= i == 1 ? H_IDLE : H_UP_CMP;
        H_UP_CMP: begin
          if (up_lt) begin
            i <= parent;
            st <= H_UP;
          end else st <= H_IDLE;
        end
        H_LAST: begin
          x <= last_val;
          i <= 1;
          st <= H_DOWN;                  // with word 0 (the root's children) in rd
        end
        H_DOWN: begin
          if (descend) i <= right_less ? child + 1'b1 : child;
          else st <= H_IDLE;
        end
        default: st <= H_IDLE;
      endcase
    end
  end

endmodule

`default_nettype wire
