// SEND/RECV matching: a RECV of rank d from rank s with tag t takes the oldest message of (s, d, t)
// that has arrived, or waits for the next one; an arriving message goes to the oldest RECV posted for
// it, or waits for one. What is left unmatched at the end is a stuck RECV or a SEND never received.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "emulator/time.h"
#include "traces/reader.h"

namespace fabemu::emu {

// `scope` keeps apart messages of the same (src, dst, tag): 0 for the ranks' own SEND/RECV, a custom
// collective's index + 1 for the SEND/RECV of its graphs (walker_custom.cpp).
struct P2pKey {
  int32_t src, dst;
  int64_t tag;
  uint32_t scope;
  bool operator==(const P2pKey&) const = default;
};

inline constexpr uint32_t kNoRun = ~uint32_t{0};

// A RECV waiting for its message.
struct PostedRecv {
  int32_t rank;
  const traces::Node* node;
  Time issued;
  uint64_t bytes;
  int32_t track;  // timeline track, -1 without a timeline
  uint32_t run;   // the custom collective run the RECV belongs to, kNoRun for the rank's own trace
};

// A message delivered before its RECV was issued.
struct ArrivedMsg {
  uint64_t bytes;
  int32_t src;
  uint64_t send_node_id;
};

class P2pMatcher {
 public:
  // The oldest message that arrived for `key`, taken; nullopt when none waits.
  std::optional<ArrivedMsg> take_arrived(const P2pKey& key);
  void post(const P2pKey& key, const PostedRecv& recv) { posted_[key].push_back(recv); }
  // The oldest RECV posted for `key`, taken; nullopt when none waits.
  std::optional<PostedRecv> take_posted(const P2pKey& key);
  void arrive(const P2pKey& key, const ArrivedMsg& msg) { arrived_[key].push_back(msg); }

  // Each RECV still waiting (a sentence for `stuck`; `path_of` names a rank's file) and each message
  // never received (for `warnings`).
  void describe_unmatched(const std::function<const std::string&(int32_t)>& path_of, std::vector<std::string>& stuck,
                          std::vector<std::string>& warnings) const;

 private:
  struct KeyHash {
    size_t operator()(const P2pKey& k) const noexcept {
      uint64_t h = (static_cast<uint64_t>(static_cast<uint32_t>(k.src)) << 32) ^ static_cast<uint32_t>(k.dst);
      h ^= static_cast<uint64_t>(k.tag) * 0x9E3779B97F4A7C15ULL;
      h ^= static_cast<uint64_t>(k.scope) * 0xD6E8FEB86659FD93ULL;
      h ^= h >> 31;
      return static_cast<size_t>(h * 0xBF58476D1CE4E5B9ULL);
    }
  };
  std::unordered_map<P2pKey, std::deque<PostedRecv>, KeyHash> posted_;
  std::unordered_map<P2pKey, std::deque<ArrivedMsg>, KeyHash> arrived_;
};

}  // namespace fabemu::emu
