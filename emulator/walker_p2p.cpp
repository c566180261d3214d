// SEND/RECV: the matcher, and the walker's side of it (issue a SEND or RECV, a SEND's message delivered).
#include "emulator/walker_p2p.h"

#include <fmt/format.h>

#include "emulator/walker_impl.h"
#include "traces/attrs.h"

namespace fabemu::emu {

namespace {

// The front of the queue under `key`, taken; the queue goes when it empties.
template <typename Map>
std::optional<typename Map::mapped_type::value_type> take_front(Map& map, const P2pKey& key) {
  auto it = map.find(key);
  if (it == map.end() || it->second.empty()) return std::nullopt;
  auto front = it->second.front();
  it->second.pop_front();
  if (it->second.empty()) map.erase(it);
  return front;
}

}  // namespace

std::optional<ArrivedMsg> P2pMatcher::take_arrived(const P2pKey& key) { return take_front(arrived_, key); }

std::optional<PostedRecv> P2pMatcher::take_posted(const P2pKey& key) { return take_front(posted_, key); }

void P2pMatcher::describe_unmatched(const std::function<const std::string&(int32_t)>& path_of,
                                    std::vector<std::string>& stuck, std::vector<std::string>& warnings) const {
  for (const auto& [key, q] : posted_) {
    for (const auto& p : q) {
      stuck.push_back(fmt::format("rank {} ({}): RECV node {} waits for a message from rank {} tag {} "
                                  "({} bytes) that no SEND delivered",
                                  p.rank, path_of(p.rank), p.node->id(), key.src, key.tag, p.bytes));
    }
  }
  for (const auto& [key, q] : arrived_) {
    for (const auto& a : q) {
      warnings.push_back(fmt::format("SEND node {} of rank {} to rank {} tag {} ({} bytes) was never received",
                                     a.send_node_id, key.src, key.dst, key.tag, a.bytes));
    }
  }
}

// ---- the walker's side -------------------------------------------------------------------------------
// The rank a SEND goes to (send) or a RECV comes from: comm_dst / comm_src, a rank of the workload; in a
// custom collective's graph a member position (checked when the graph was read), turned into its rank.
int32_t Walker::Impl::p2p_peer(int32_t r, const Node& node, uint32_t run, bool send) const {
  const auto info = traces::comm_info(node);
  const auto peer = send ? info.dst : info.src;
  if (run != kNoRun) return custom_peer(run, *peer);
  if (!peer || *peer < 0 || *peer >= static_cast<int64_t>(ranks_.size())) {
    throw traces::TraceError(where(r, node), peer ? fmt::format("{} rank {}, which is not in the workload (ranks "
                                                                "0..{})",
                                                                send ? "SEND to" : "RECV from", *peer,
                                                                ranks_.size() - 1)
                                                  : std::string(send ? "SEND without comm_dst" : "RECV without comm_src"));
  }
  return static_cast<int32_t>(*peer);
}

void Walker::Impl::issue_send(int32_t r, const Node& node, uint32_t run) {
  const auto info = traces::comm_info(node);
  const int32_t dst = p2p_peer(r, node, run, true);
  RankState& R = ranks_[static_cast<size_t>(r)];
  account(R);
  ++R.comm_active;
  const uint32_t id = msgs_.acquire();
  Msg& M = msgs_[id];
  M.kind = MsgKind::kP2p;
  M.src = r;
  M.dst = dst;
  M.bytes = info.size.value_or(0);
  M.sent = engine_.now();
  M.send_node = &node;
  M.tag = info.tag.value_or(0);
  M.run = run;
  M.scope = run == kNoRun ? 0 : runs_[run].scope;
  M.member = options_.timeline != nullptr && run == kNoRun ? take_track(R) : -1;
  ++result_.messages;
  result_.message_bytes += M.bytes;
  uint64_t flow = static_cast<uint64_t>(M.tag);
  uint32_t coll = Message::kNoCollective;
  if (run == kNoRun) {
    ++result_.p2p.sends;
    result_.p2p.bytes += M.bytes;
  } else {  // a custom collective's message: the collective's, by its index (scope - 1)
    coll = M.scope - 1;
    CollectiveResult& cr = result_.collectives[coll];
    ++cr.messages;
    cr.message_bytes += M.bytes;
    flow = (static_cast<uint64_t>(coll) << 20) ^ flow;
  }
  fabric_.send(Message{id, M.src, M.dst, M.bytes, flow, coll});
}

void Walker::Impl::issue_recv(int32_t r, const Node& node, uint32_t run) {
  const auto info = traces::comm_info(node);
  const int32_t src = p2p_peer(r, node, run, false);
  RankState& R = ranks_[static_cast<size_t>(r)];
  account(R);
  ++R.comm_active;
  const P2pKey key{src, r, info.tag.value_or(0), run == kNoRun ? 0 : runs_[run].scope};
  const uint64_t bytes = info.size.value_or(0);
  const bool tracks = options_.timeline != nullptr && run == kNoRun;
  if (const auto arrived = p2p_.take_arrived(key)) {
    check_sizes(r, node, bytes, *arrived);
    account(R);
    --R.comm_active;
    p2p_node_done(r, run, node, engine_.now(), "recv", tracks ? 0 : -1, bytes);
    return;
  }
  p2p_.post(key, PostedRecv{r, &node, engine_.now(), bytes, tracks ? take_track(R) : -1, run});
}

void Walker::Impl::check_sizes(int32_t r, const Node& recv, uint64_t want, const ArrivedMsg& a) {
  const bool size_known = traces::find_attr(recv, "comm_size") != nullptr;
  if (size_known && want != a.bytes) {
    throw traces::TraceError(where(r, recv), fmt::format("RECV of {} bytes from rank {} matched SEND node {} of "
                                                         "rank {}, which sends {} bytes",
                                                         want, a.src, a.send_node_id, a.src, a.bytes));
  }
}

// The SEND completes when its message is delivered; a RECV waiting for it completes with it.
void Walker::Impl::p2p_delivered(uint32_t id) {
  const Msg M = msgs_[id];
  msgs_.release(id);
  RankState& S = ranks_[static_cast<size_t>(M.src)];
  account(S);
  --S.comm_active;
  message_log_.delivered(M.src, M.dst, M.bytes, M.sent, engine_.now(),
                         M.run == kNoRun ? ~uint64_t{0} : uint64_t{M.scope} - 1);
  if (options_.timeline != nullptr) release_track(S, M.member);
  const P2pKey key{M.src, M.dst, M.tag, M.scope};
  const ArrivedMsg a{M.bytes, M.src, M.send_node->id()};
  if (const auto posted = p2p_.take_posted(key)) {
    const PostedRecv p = *posted;
    check_sizes(p.rank, *p.node, p.bytes, a);
    RankState& D = ranks_[static_cast<size_t>(p.rank)];
    account(D);
    --D.comm_active;
    if (options_.timeline != nullptr) release_track(D, p.track);
    p2p_node_done(M.src, M.run, *M.send_node, M.sent, "send", M.member, M.bytes);
    p2p_node_done(p.rank, p.run, *p.node, p.issued, "recv", p.track, p.bytes);
    return;
  }
  p2p_.arrive(key, a);
  p2p_node_done(M.src, M.run, *M.send_node, M.sent, "send", M.member, M.bytes);
}

}  // namespace fabemu::emu
