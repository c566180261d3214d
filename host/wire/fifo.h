// A FIFO on a power-of-two vector that only grows: the queues of the Sender (reassembly.h) and of the
// pcap writer's buffers (pcap_writer.h). No allocation once it has reached its largest size, or after
// reserve() of the most it will ever hold.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <vector>

namespace fabemu::host::dpdk::detail {

template <class T>
class Ring {
 public:
  bool empty() const noexcept { return size_ == 0; }
  size_t size() const noexcept { return size_; }
  T& front() noexcept { return buf_[head_]; }
  void pop() noexcept {
    head_ = (head_ + 1) & mask_;
    --size_;
  }
  void push(const T& v) {
    if (size_ == buf_.size()) [[unlikely]]
      grow(2 * buf_.size());
    buf_[(head_ + size_) & mask_] = v;
    ++size_;
  }
  // Room for n entries: the next n pushes (less what is queued) allocate nothing. Grows as push() does
  // (at least 16 entries, doubling), so reserving one more before each push costs no extra reallocations.
  void reserve(size_t n) {
    if (n > buf_.size()) [[unlikely]]
      grow(n);
  }

 private:
  // To the smallest power of two, at least 16 and at least double the size, that holds n entries.
  [[gnu::noinline]] void grow(size_t n) {
    std::vector<T> next(std::bit_ceil(std::max({n, size_t{16}, 2 * buf_.size()})));
    for (size_t i = 0; i < size_; ++i) next[i] = buf_[(head_ + i) & mask_];
    buf_.swap(next);
    head_ = 0;
    mask_ = buf_.size() - 1;
  }
  std::vector<T> buf_;
  size_t mask_ = 0;  // buf_.size() - 1 (kept: the size of a vector of T is a division by sizeof(T))
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace fabemu::host::dpdk::detail
