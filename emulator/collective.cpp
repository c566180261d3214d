#include "emulator/collective.h"

#include <bit>
#include <cassert>

namespace fabemu::emu {

const char* phase_op_name(PhaseOp op) {
  switch (op) {
    case PhaseOp::kAllReduce: return "all-reduce";
    case PhaseOp::kReduceScatter: return "reduce-scatter";
    case PhaseOp::kAllGather: return "all-gather";
    case PhaseOp::kAllToAll: return "all-to-all";
    case PhaseOp::kBroadcast: return "broadcast";
    case PhaseOp::kReduce: return "reduce";
    case PhaseOp::kGather: return "gather";
    case PhaseOp::kScatter: return "scatter";
  }
  return "?";
}

const char* algo_name(CollectiveAlgo algo) {
  switch (algo) {
    case CollectiveAlgo::kRing: return "ring";
    case CollectiveAlgo::kDirect: return "direct";
    case CollectiveAlgo::kHalvingDoubling: return "halvingDoubling";
    case CollectiveAlgo::kDoubleBinaryTree: return "doubleBinaryTree";
  }
  return "?";
}

namespace {

bool rooted(PhaseOp op) {
  return op == PhaseOp::kBroadcast || op == PhaseOp::kReduce || op == PhaseOp::kGather || op == PhaseOp::kScatter;
}

uint32_t ceil_log2(int32_t n) {
  return n <= 1 ? 0u : static_cast<uint32_t>(std::bit_width(static_cast<uint32_t>(n - 1)));
}

// Binomial trees in doubling order: member r (relative to the root) gets its data at step
// floor(log2 r) from r - 2^floor(log2 r). The subtree of q, reached at step s, is every member
// m < n with m mod 2^(s+1) == q.
uint64_t binomial_subtree(int32_t n, int32_t q, uint32_t s) {
  const int64_t period = int64_t{1} << (s + 1);
  return static_cast<uint64_t>((n - 1 - q) / period + 1);
}

}  // namespace

CollectiveAlgo PhaseSchedule::resolve_algo(PhaseOp op, CollectiveAlgo wanted, int32_t n, std::string* why) {
  auto fallback = [&](CollectiveAlgo to, const char* reason) {
    if (why != nullptr) *why = std::string(algo_name(wanted)) + " " + reason + "; using " + algo_name(to);
    return to;
  };
  if (why != nullptr) why->clear();
  const bool pow2 = n > 0 && std::has_single_bit(static_cast<uint32_t>(n));
  switch (wanted) {
    case CollectiveAlgo::kRing:
    case CollectiveAlgo::kDirect:
      return wanted;
    case CollectiveAlgo::kHalvingDoubling:
      if (op == PhaseOp::kAllToAll) return fallback(CollectiveAlgo::kRing, "has no all-to-all");
      if (!rooted(op) && !pow2) return fallback(CollectiveAlgo::kRing, "needs a power-of-two group");
      return wanted;
    case CollectiveAlgo::kDoubleBinaryTree:
      if (op == PhaseOp::kAllReduce || op == PhaseOp::kBroadcast || op == PhaseOp::kReduce) return wanted;
      if (op == PhaseOp::kGather || op == PhaseOp::kScatter) {
        return fallback(CollectiveAlgo::kHalvingDoubling, "has no gather/scatter (binomial tree instead)");
      }
      return fallback(CollectiveAlgo::kRing, "is defined for all-reduce, broadcast and reduce only");
  }
  return wanted;
}

PhaseSchedule::PhaseSchedule(PhaseOp op, CollectiveAlgo algo, int32_t n, uint64_t bytes, int32_t root, int tree)
    : op_(op), algo_(resolve_algo(op, algo, n)), n_(n), bytes_(bytes), root_(rooted(op) ? root : 0), tree_(tree) {
  assert(n >= 1 && root_ >= 0 && root_ < n);
  lg_ = ceil_log2(n);
  const auto n1 = static_cast<uint32_t>(n - 1);
  if (n <= 1) {
    steps_ = 0;
    return;
  }
  switch (algo_) {
    case CollectiveAlgo::kRing:
      switch (op_) {
        case PhaseOp::kAllReduce: steps_ = 2 * n1; break;
        case PhaseOp::kReduceScatter:
        case PhaseOp::kAllGather: steps_ = n1; break;
        case PhaseOp::kAllToAll: steps_ = static_cast<uint32_t>(uint64_t{n1} * static_cast<uint64_t>(n) / 2); break;
        default: steps_ = 2; break;  // chains
      }
      break;
    case CollectiveAlgo::kDirect:
      steps_ = op_ == PhaseOp::kAllReduce ? 2 : 1;
      break;
    case CollectiveAlgo::kHalvingDoubling:
      steps_ = op_ == PhaseOp::kAllReduce ? 2 * lg_ : lg_;
      break;
    case CollectiveAlgo::kDoubleBinaryTree:
      steps_ = op_ == PhaseOp::kAllReduce ? 4 : 2;
      break;
  }
}

uint32_t PhaseSchedule::tree_children(int32_t pos) const noexcept {
  return static_cast<uint32_t>((2 * pos + 1 < n_) + (2 * pos + 2 < n_));
}

bool PhaseSchedule::step_synchronous() const noexcept {
  if (algo_ == CollectiveAlgo::kDoubleBinaryTree) return false;
  if (rooted(op_) && algo_ == CollectiveAlgo::kRing) return false;  // chains
  return true;
}

uint32_t PhaseSchedule::num_sends(int32_t i, uint32_t s) const noexcept {
  if (n_ <= 1) return 0;
  const auto n1 = static_cast<uint32_t>(n_ - 1);
  switch (algo_) {
    case CollectiveAlgo::kRing:
      if (!rooted(op_)) return 1;
      if (s != 1) return 0;
      if (op_ == PhaseOp::kBroadcast || op_ == PhaseOp::kScatter) return rel(i) < n_ - 1 ? 1 : 0;
      return rel(i) > 0 ? 1 : 0;  // reduce, gather: towards the root
    case CollectiveAlgo::kDirect:
      if (!rooted(op_)) return n1;
      if (op_ == PhaseOp::kBroadcast || op_ == PhaseOp::kScatter) return rel(i) == 0 ? n1 : 0;
      return rel(i) == 0 ? 0 : 1;
    case CollectiveAlgo::kHalvingDoubling: {
      if (!rooted(op_)) return 1;
      const int32_t r = rel(i);
      const int32_t d = int32_t{1} << s;
      if (op_ == PhaseOp::kBroadcast || op_ == PhaseOp::kScatter) return (r < d && r + d < n_) ? 1 : 0;
      // reduce / gather: q sends at step lg-1-floor(log2 q)
      if (r == 0) return 0;
      const auto sq = static_cast<uint32_t>(std::bit_width(static_cast<uint32_t>(r)) - 1);
      return s == lg_ - 1 - sq ? 1 : 0;
    }
    case CollectiveAlgo::kDoubleBinaryTree: {
      if (op_ == PhaseOp::kAllReduce) {
        const int32_t p = tree_pos(i);
        if (s == 1) return p > 0 ? 1 : 0;
        if (s == 3) return tree_children(p);
        return 0;
      }
      const int32_t p = rel(i);
      if (s != 1) return 0;
      if (op_ == PhaseOp::kBroadcast) return tree_children(p);
      return p > 0 ? 1 : 0;  // reduce
    }
  }
  return 0;
}

ScheduledSend PhaseSchedule::send(int32_t i, uint32_t s, uint32_t k) const noexcept {
  const uint64_t c = bytes_;
  const auto n = static_cast<uint64_t>(n_);
  switch (algo_) {
    case CollectiveAlgo::kRing:
      switch (op_) {
        case PhaseOp::kAllReduce:
        case PhaseOp::kReduceScatter:
        case PhaseOp::kAllToAll: return {(i + 1) % n_, c / n, s};
        case PhaseOp::kAllGather: return {(i + 1) % n_, c, s};
        case PhaseOp::kBroadcast: return {abs(rel(i) + 1), c, 0};
        case PhaseOp::kReduce: return {abs(rel(i) - 1), c, 0};
        case PhaseOp::kGather: return {abs(rel(i) - 1), static_cast<uint64_t>(n_ - rel(i)) * c, 0};
        case PhaseOp::kScatter: return {abs(rel(i) + 1), static_cast<uint64_t>(n_ - 1 - rel(i)) * c, 0};
      }
      break;
    case CollectiveAlgo::kDirect: {
      if (!rooted(op_)) {
        const int32_t peer = (i + 1 + static_cast<int32_t>(k)) % n_;
        return {peer, op_ == PhaseOp::kAllGather ? c : c / n, s};
      }
      if (op_ == PhaseOp::kBroadcast || op_ == PhaseOp::kScatter) return {abs(static_cast<int32_t>(k) + 1), c, 0};
      return {root_, c, 0};
    }
    case CollectiveAlgo::kHalvingDoubling: {
      switch (op_) {
        case PhaseOp::kAllReduce:
          if (s < lg_) return {i ^ (int32_t{1} << s), c >> (s + 1), s};
          return {i ^ (int32_t{1} << (2 * lg_ - 1 - s)), c >> (2 * lg_ - s), s};
        case PhaseOp::kReduceScatter: return {i ^ (int32_t{1} << s), c >> (s + 1), s};
        case PhaseOp::kAllGather: return {i ^ (int32_t{1} << s), c << s, s};
        case PhaseOp::kBroadcast: return {abs(rel(i) + (int32_t{1} << s)), c, s};
        case PhaseOp::kScatter: {
          const int32_t q = rel(i) + (int32_t{1} << s);
          return {abs(q), binomial_subtree(n_, q, s) * c, s};
        }
        case PhaseOp::kReduce:
        case PhaseOp::kGather: {
          const int32_t q = rel(i);
          const auto sq = static_cast<uint32_t>(std::bit_width(static_cast<uint32_t>(q)) - 1);
          const uint64_t b = op_ == PhaseOp::kGather ? binomial_subtree(n_, q, sq) * c : c;
          return {abs(q - (int32_t{1} << sq)), b, s};
        }
        default: break;
      }
      break;
    }
    case CollectiveAlgo::kDoubleBinaryTree: {
      if (op_ == PhaseOp::kAllReduce) {
        const int32_t p = tree_pos(i);
        if (s == 1) return {tree_member((p - 1) / 2), c, 0};
        return {tree_member(2 * p + 1 + static_cast<int32_t>(k)), c, 2};
      }
      const int32_t p = rel(i);
      if (op_ == PhaseOp::kBroadcast) return {abs(2 * p + 1 + static_cast<int32_t>(k)), c, 0};
      return {abs((p - 1) / 2), c, 0};
    }
  }
  return {0, 0, 0};
}

uint32_t PhaseSchedule::num_recvs(int32_t i, uint32_t s) const noexcept {
  if (n_ <= 1) return 0;
  const auto n1 = static_cast<uint32_t>(n_ - 1);
  switch (algo_) {
    case CollectiveAlgo::kRing:
      if (!rooted(op_)) return 1;
      if (s != 0) return 0;
      if (op_ == PhaseOp::kBroadcast || op_ == PhaseOp::kScatter) return rel(i) > 0 ? 1 : 0;
      return rel(i) < n_ - 1 ? 1 : 0;
    case CollectiveAlgo::kDirect:
      if (!rooted(op_)) return n1;
      if (op_ == PhaseOp::kBroadcast || op_ == PhaseOp::kScatter) return rel(i) == 0 ? 0 : 1;
      return rel(i) == 0 ? n1 : 0;
    case CollectiveAlgo::kHalvingDoubling: {
      if (!rooted(op_)) return 1;
      const int32_t r = rel(i);
      const int32_t d = int32_t{1} << s;
      if (op_ == PhaseOp::kBroadcast || op_ == PhaseOp::kScatter) return (r >= d && r < 2 * d) ? 1 : 0;
      // reduce / gather: r receives at step t from r + 2^(lg-1-t) when that is > r and < n
      const int32_t dist = int32_t{1} << (lg_ - 1 - s);
      return (dist > r && r + dist < n_) ? 1 : 0;
    }
    case CollectiveAlgo::kDoubleBinaryTree: {
      if (op_ == PhaseOp::kAllReduce) {
        const int32_t p = tree_pos(i);
        if (s == 0) return tree_children(p);
        if (s == 2) return p > 0 ? 1 : 0;
        return 0;
      }
      const int32_t p = rel(i);
      if (s != 0) return 0;
      if (op_ == PhaseOp::kBroadcast) return p > 0 ? 1 : 0;
      return tree_children(p);
    }
  }
  return 0;
}

uint64_t PhaseSchedule::reduce_bytes(int32_t i, uint32_t s) const noexcept {
  if (num_recvs(i, s) == 0) return 0;
  const uint64_t c = bytes_;
  const auto n = static_cast<uint64_t>(n_);
  switch (op_) {
    case PhaseOp::kAllReduce:
      switch (algo_) {
        case CollectiveAlgo::kRing: return s < static_cast<uint32_t>(n_ - 1) ? c / n : 0;
        case CollectiveAlgo::kDirect: return s == 0 ? c / n : 0;
        case CollectiveAlgo::kHalvingDoubling: return s < lg_ ? c >> (s + 1) : 0;
        case CollectiveAlgo::kDoubleBinaryTree: return s == 0 ? c : 0;
      }
      return 0;
    case PhaseOp::kReduceScatter:
      return algo_ == CollectiveAlgo::kHalvingDoubling ? c >> (s + 1) : c / n;
    case PhaseOp::kReduce:
      return c;
    default:
      return 0;
  }
}

}  // namespace fabemu::emu
