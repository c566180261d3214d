// The sum of N 16-bit words (RFC 1071's ones'-complement sum before folding: plain addition, folded
// later by sched_csum_fold), as a pipelined tree of clock-enabled stages, each adding groups of four
// as (a + b) + (c + d): two carry chains in series per stage. ceil(log4(N)) stages (at least one);
// OW-bit sums (N * 65535 must fit). Word i is words[16i +: 16].
`default_nettype none

module sched_csum_tree #(
  parameter int N  = 4,
  parameter int OW = 24
) (
  input  wire logic            clk,
  input  wire logic            en,
  input  wire logic [16*N-1:0] words,
  output      logic [OW-1:0]   q
);

  // Entries of level l (level 0: the words).
  function automatic int count(input int l);
    int c;
    c = N;
    for (int i = 0; i < l; i++) c = (c + 3) / 4;
    count = c;
  endfunction
  function automatic int levels();
    int l;
    l = 1;
    while (count(l) > 1) l++;
    levels = l;
  endfunction
  // Offset of level l's entries in `sums` (levels 1..LEVELS).
  function automatic int offset(input int l);
    int o;
    o = 0;
    for (int i = 1; i < l; i++) o += count(i);
    offset = o;
  endfunction
  localparam int LEVELS = levels();
  localparam int TOTAL = offset(LEVELS + 1);

  logic [OW*TOTAL-1:0] sums;

  // Entry j of level l (zero past the level's end).
  function automatic logic [OW-1:0] entry(input logic [16*N-1:0] w, input logic [OW*TOTAL-1:0] s,
                                          input int l, input int j);
    if (j >= count(l)) entry = '0;
    else if (l == 0) entry = OW'(w[16 * j +: 16]);
    else entry = s[OW * (offset(l) + j) +: OW];
  endfunction

  always_ff @(posedge clk) begin
    if (en) begin
      for (int l = 1; l <= LEVELS; l++) begin
        for (int i = 0; i < count(l); i++) begin
          sums[OW * (offset(l) + i) +: OW] <=
              (entry(words, sums, l - 1, 4 * i) + entry(words, sums, l - 1, 4 * i + 1)) +
              (entry(words, sums, l - 1, 4 * i + 2) + entry(words, sums, l - 1, 4 * i + 3));
        end
      end
    end
  end
  assign q = sums[OW * offset(LEVELS) +: OW];

endmodule

`default_nettype wire
