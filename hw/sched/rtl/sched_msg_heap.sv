// Binary min-heap of sched_msg's events in block RAM: entries are compared whole as unsigned numbers, so
// with the key {time, class, sequence} in the top bits (the sequence unique) the minimum is the next event in
// MsgSchedModel's order. One operation at a time (push or pop); `ready` is high between operations and
// `top` (the minimum, registered) is valid whenever ready && !empty. Node j (1-based) lives in lane j[0]
// at word j >> 1, so the two children of node i are word i of the even and the odd lane: one read per level.
// Push sifts up (two cycles per level climbed), pop sifts the last entry down (two cycles per level).
`default_nettype none

module sched_msg_heap #(
  parameter int EW = 140,  // entry width, bits
  parameter int HI = 12    // index width: holds up to 2^HI - 1 entries
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

  localparam int WA = HI - 1;
  typedef enum logic [2:0] {H_IDLE, H_UP, H_UP_CMP, H_LAST, H_LAST_WAIT, H_DOWN, H_DOWN_CMP} hstate_t;

  (* ram_style = "block" *) logic [EW-1:0] lane0 [2**WA];
  (* ram_style = "block" *) logic [EW-1:0] lane1 [2**WA];
  logic [EW-1:0] rd0, rd1;       // registered reads of both lanes
  logic [EW-1:0] x;              // the entry being placed
  logic [HI-1:0] i;              // its current node
  logic [HI-1:0] size;           // entries
  hstate_t st;

  // Writes: one node a cycle, in its lane.
  logic          we;
  logic [HI-1:0] wnode;
  logic [EW-1:0] wdata;
  // Reads: one word a cycle, both lanes.
  logic          re;
  logic [WA-1:0] raddr;

  wire logic [HI-1:0] parent = i >> 1;
  wire logic [HI-1:0] child  = {i[HI-2:0], 1'b0};
  wire logic          has_right = child + 1'b1 <= size;
  wire logic          right_less = has_right && rd1 < rd0;
  wire logic [EW-1:0] least = right_less ? rd1 : rd0;
  wire logic [EW-1:0] pval = parent[0] ? rd1 : rd0;

  always_comb begin
    we = 1'b0;
    wnode = i;
    wdata = x;
    re = 1'b0;
    raddr = parent[HI-1:1];
    unique case (st)
      H_UP: begin
        if (i == 1) we = 1'b1;
        else re = 1'b1;
      end
      H_UP_CMP: begin
        we = 1'b1;
        if (x < pval) wdata = pval;
      end
      H_LAST: begin
        re = 1'b1;
        raddr = lastw;  // the word of the last node before the pop
      end
      H_DOWN: begin
        if (child > size || child == 0) we = 1'b1;
        else begin
          re = 1'b1;
          raddr = i[WA-1:0];
        end
      end
      H_DOWN_CMP: begin
        we = 1'b1;
        if (least < x) wdata = least;
      end
      default: ;
    endcase
  end

  always_ff @(posedge clk) begin
    if (we) begin
      if (wnode[0]) lane1[wnode[HI-1:1]] <= wdata;
      else lane0[wnode[HI-1:1]] <= wdata;
    end
    if (re) begin
      rd0 <= lane0[raddr];
      rd1 <= lane1[raddr];
    end
  end

  // The last node before a pop: its lane and word (size is decremented in the pop's cycle).
  logic          last_odd;
  logic [WA-1:0] lastw;

  always_ff @(posedge clk) begin
    if (rst) begin
      st <= H_IDLE;
      size <= '0;
      ready <= 1'b0;
      empty <= 1'b1;
      i <= '0;
      last_odd <= 1'b0;
      lastw <= '0;
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
              last_odd <= size[0];
              lastw <= size[HI-1:1];
              st <= H_LAST;
            end
          end
        end
        H_UP: st <= i == 1 ? H_IDLE : H_UP_CMP;
        H_UP_CMP: begin
          if (x < pval) begin
            i <= parent;
            st <= H_UP;
          end else st <= H_IDLE;
        end
        H_LAST: st <= H_LAST_WAIT;
        H_LAST_WAIT: begin
          x <= last_odd ? rd1 : rd0;
          i <= 1;
          st <= H_DOWN;
        end
        H_DOWN: st <= child > size || child == 0 ? H_IDLE : H_DOWN_CMP;
        H_DOWN_CMP: begin
          if (least < x) begin
            i <= right_less ? child + 1'b1 : child;
            st <= H_DOWN;
          end else st <= H_IDLE;
        end
        default: st <= H_IDLE;
      endcase
    end
  end

endmodule

`default_nettype wire
