// Shared-token authentication of the lab control plane: token files, nonces and the HMAC proofs.
// The token never crosses the wire; each side proves it knows the token by an HMAC over both fresh nonces.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include "host/lab/lab.pb.h"

namespace fabemu::lab {

inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kMacBytes = 32;  // SHA-256

// Reads the shared token: the file's content without trailing whitespace. Throws LabError naming the file
// when it is missing or unreadable, not a regular file (a directory, a FIFO, a device: checked before it is
// opened, so a FIFO cannot block), accessible by its group or by others (chmod 600 it), or the token is empty.
std::string read_token_file(const std::string& path);

// kNonceBytes from OpenSSL's CSPRNG; throws LabError when it fails.
std::string random_nonce();

// HMAC-SHA256(key, data), 32 raw bytes.
std::string hmac_sha256(std::string_view key, std::string_view data);

// The proof `role` sends: HMAC-SHA256(token, "fabemu-lab-v1" || coordinator_nonce || agent_nonce || role name).
std::string auth_mac(std::string_view token, std::string_view coordinator_nonce, std::string_view agent_nonce,
                     proto::Role role);

// Constant-time equality (CRYPTO_memcmp); false when the sizes differ.
bool macs_equal(std::string_view a, std::string_view b);

// How long to wait before answering a failed authentication from a peer address: `base` for its first
// failure, doubled per further failure, at most 32 x base. A peer's count is forgotten 60 s after its last
// failure or on its success; at most 4096 peers are remembered (the stalest go first).
class AuthFailureDelay {
 public:
  using Clock = std::chrono::steady_clock;
  explicit AuthFailureDelay(std::chrono::milliseconds base) : base_(base) {}
  // Records a failure of `peer` and returns the delay to apply to it.
  std::chrono::milliseconds fail(const std::string& peer, Clock::time_point now = Clock::now());
  void succeed(const std::string& peer) { peers_.erase(peer); }
  std::size_t peers() const { return peers_.size(); }

 private:
  struct Failures {
    unsigned count = 0;
    Clock::time_point last{};
  };
  std::chrono::milliseconds base_;
  std::map<std::string, Failures> peers_;
};

}  // namespace fabemu::lab
