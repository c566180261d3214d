// Measured vs modelled per collective on a real-time fabric (the DPDK fabric and the lab's socket fabric):
// every wire message of a collective, once delivered, adds its modelled ready time, its real start (its
// hand-over by the walker, or its ready time if that is later), its modelled delivery and its real arrival,
// all in emulated time. A collective's modelled span runs from its earliest ready time to its latest modelled
// delivery; its measured span from its earliest real start to its latest real arrival (a collective the
// walker could only start late, waiting for an earlier one's late messages, is measured for its own time on
// the wire, not for what it inherited); deviation = measured / modelled - 1 (negative: the lab path was
// faster than the target). The report's `collectives[]` of the "dpdk" and "socket" sections (docs/report.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "emulator/time.h"

namespace fabemu::host::dpdk {

class CollectiveSpans {
 public:
  struct Span {
    uint32_t coll = 0;                 // position in RunResult::collectives
    uint64_t messages = 0, bytes = 0;  // its wire messages (src != dst) and their bytes
    emu::Duration modelled, measured;
    double deviation = 0;              // measured / modelled - 1; 0 when modelled is 0
    uint64_t measured_from_ps = 0, measured_to_ps = 0;  // the measured span, emulated ps
  };

  // A delivered wire message of collective `coll` (RunResult::collectives' index). Amortized O(1): the
  // table doubles when a collective beyond it comes.
  void add(uint32_t coll, uint64_t bytes, emu::Time ready, emu::Time start, emu::Time modelled_end,
           emu::Time measured_end) {
    if (coll >= acc_.size()) acc_.resize(std::max<size_t>(size_t{coll} + 1, acc_.size() * 2));
    Acc& a = acc_[coll];
    ++a.messages;
    a.bytes += bytes;
    a.first_ready_ps = std::min(a.first_ready_ps, ready.ps());
    a.first_start_ps = std::min(a.first_start_ps, std::max(ready, start).ps());
    a.modelled_end_ps = std::max(a.modelled_end_ps, modelled_end.ps());
    a.measured_end_ps = std::max(a.measured_end_ps, measured_end.ps());
  }

  bool empty() const noexcept { return acc_.empty(); }

  // The collectives that had wire messages, in index order.
  std::vector<Span> spans() const {
    std::vector<Span> out;
    for (size_t c = 0; c < acc_.size(); ++c) {
      const Acc& a = acc_[c];
      if (a.messages == 0) continue;
      Span s;
      s.coll = static_cast<uint32_t>(c);
      s.messages = a.messages;
      s.bytes = a.bytes;
      s.modelled = emu::Duration::from_ps(a.modelled_end_ps - a.first_ready_ps);
      s.measured_from_ps = a.first_start_ps;
      s.measured_to_ps = std::max(a.measured_end_ps, a.first_start_ps);
      s.measured = emu::Duration::from_ps(s.measured_to_ps - s.measured_from_ps);
      s.deviation = s.modelled.ps() == 0
                        ? 0.0
                        : static_cast<double>(s.measured.ps()) / static_cast<double>(s.modelled.ps()) - 1.0;
      out.push_back(s);
    }
    return out;
  }

 private:
  struct Acc {
    uint64_t messages = 0, bytes = 0;
    uint64_t first_ready_ps = ~uint64_t{0}, modelled_end_ps = 0;
    uint64_t first_start_ps = ~uint64_t{0}, measured_end_ps = 0;
  };
  std::vector<Acc> acc_;  // by collective index
};

}  // namespace fabemu::host::dpdk
