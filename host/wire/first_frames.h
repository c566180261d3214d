// The first frames of messages in a transmit queue (frames built, waiting for tx_burst), so that each
// message's send time is read when the device takes its first frame, not when the frame was built: the
// DPDK fabric builds up to a queue's limit of frames (256) before its first tx_burst, and a stamp taken
// while building counted that batching (several microseconds of the main lcore's work) as wire latency.
#pragma once

#include <cstddef>
#include <vector>

namespace fabemu::host::dpdk {

// T: the caller's record of a message. Positions are indices into the transmit queue the frames are in.
template <class T>
class FirstFrames {
 public:
  // The message `what` has its first frame at `index` of the queue (indices added in increasing order).
  void add(size_t index, T* what) { firsts_.push_back(Entry{index, what}); }
  // The device took frames [from, from + took) of the queue: stamp(T&) for each message whose first frame
  // is among them.
  template <class Stamp>
  void taken(size_t from, size_t took, Stamp&& stamp) {
    const size_t end = from + took;
    while (head_ < firsts_.size() && firsts_[head_].index < end) stamp(*firsts_[head_++].what);
  }
  // The queue's first `sent` frames were taken and removed from it: the frames still waiting move down.
  void erased(size_t sent) {
    firsts_.erase(firsts_.begin(), firsts_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
    if (sent == 0) return;
    for (Entry& e : firsts_) e.index -= sent;
  }
  // Forgets every entry (the frames were dropped), keeping the room.
  void clear() noexcept {
    firsts_.clear();
    head_ = 0;
  }
  // Messages whose first frame is still waiting.
  size_t waiting() const noexcept { return firsts_.size() - head_; }

 private:
  struct Entry {
    size_t index;
    T* what;
  };
  std::vector<Entry> firsts_;
  size_t head_ = 0;
};

}  // namespace fabemu::host::dpdk
