// The register and record map of the fabemu message-scheduler kernel. The C++ twin is
// hw/sched/include/fabemu_sched_map.h; test_fpga_map checks that the two agree, name by name.
`default_nettype none

// The map is shared: no single module uses every entry.
/* verilator lint_off UNUSEDPARAM */
package fabemu_sched_pkg;

  // --- AXI4-Lite control registers (byte offsets, 32-bit registers) -------------------------------
  localparam int REG_CTRL          = 'h00;  // ap_ctrl_hs: bit 0 start, 1 done (COR), 2 idle, 3 ready (COR)
  localparam int REG_GIE           = 'h04;  // bit 0: global interrupt enable
  localparam int REG_IER           = 'h08;  // bit 0: done interrupt enable, bit 1: ready
  localparam int REG_ISR           = 'h0C;  // bit 0: done, bit 1: ready (toggle on write)
  localparam int REG_LINKS_ADDR_LO = 'h10;  // device address of the link table (0 entries: keep state)
  localparam int REG_LINKS_ADDR_HI = 'h14;
  localparam int REG_DESC_ADDR_LO  = 'h18;  // device address of the hop descriptors
  localparam int REG_DESC_ADDR_HI  = 'h1C;
  localparam int REG_CMPL_ADDR_LO  = 'h20;  // device address of the completion records
  localparam int REG_CMPL_ADDR_HI  = 'h24;
  localparam int REG_NUM_LINKS     = 'h28;  // link table entries to load before the descriptors
  localparam int REG_NUM_DESC      = 'h30;  // hop descriptors to process (= completions written)
  localparam int REG_CYCLES_LO     = 'h38;  // read-only: clock cycles of the last run, start to done
  localparam int REG_CYCLES_HI     = 'h3C;
  localparam int REG_LINK_CAP      = 'h40;  // read-only: link-table capacity of this build
  localparam int REG_VERSION       = 'h44;  // read-only: MAP_VERSION
  localparam int REG_STATUS        = 'h48;  // read-only: STATUS_* error bits of the last run (sticky)

  localparam int MAP_VERSION       = 'h0001_0001;  // major 1, minor 1 (REG_STATUS)

  localparam int CTRL_AP_START     = 0;
  localparam int CTRL_AP_DONE      = 1;
  localparam int CTRL_AP_IDLE      = 2;
  localparam int CTRL_AP_READY     = 3;

  // REG_STATUS bits: set when a response of the run was not OKAY, cleared when the next run starts.
  localparam int STATUS_RD_ERR     = 0;    // m00_axi: RRESP != OKAY (link table or descriptors)
  localparam int STATUS_WR_ERR     = 1;    // m01_axi: BRESP != OKAY (completions)

  // --- memory records: every record is one 256-bit (32-byte) little-endian AXI beat ----------------
  localparam int RECORD_BYTES      = 32;
  localparam int RECORD_BITS       = 256;
  // Buffers must be aligned to a whole burst so that no burst crosses a 4 KiB page.
  localparam int BURST_BEATS       = 16;
  localparam int BUFFER_ALIGN      = 512;

  // Link table entry.
  localparam int LINK_RATE_LSB     = 0;    // 64: Q32.32 ps per byte
  localparam int LINK_LATENCY_LSB  = 64;   // 64: latency, ps
  localparam int LINK_FREE_LSB     = 128;  // 64: initial link_free, ps
  // Hop descriptor: one packet reaching one link.
  localparam int DESC_TIME_LSB     = 0;    // 64: time the packet reaches the link, ps
  localparam int DESC_BYTES_LSB    = 64;   // 32: packet bytes
  localparam int DESC_LINK_LSB     = 96;   // 32: link id (< link capacity)
  localparam int DESC_TAG_LSB      = 128;  // 64: host's tag, echoed in the completion
  // Completion record, one per descriptor, in descriptor order.
  localparam int CMPL_DEPART_LSB   = 0;    // 64: d = max(t, link_free), ps
  localparam int CMPL_ARRIVE_LSB   = 64;   // 64: d + ser(bytes) + latency, ps
  localparam int CMPL_TAG_LSB      = 128;  // 64: the descriptor's tag
  localparam int CMPL_LINK_LSB     = 192;  // 32: the descriptor's link
  localparam int CMPL_BYTES_LSB    = 224;  // 32: the descriptor's bytes

endpackage
/* verilator lint_on UNUSEDPARAM */

`default_nettype wire
