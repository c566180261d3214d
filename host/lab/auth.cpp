#include "host/lab/auth.h"

#include <fmt/core.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include "host/config/config_util.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "host/lab/error.h"

namespace fabemu::lab {


std::string read_token_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw LabError(proto::ERROR_AUTH_FAILED, fmt::format("token file {} does not exist or cannot be read", path));
  }
  if (!S_ISREG(st.st_mode)) {
    throw LabError(proto::ERROR_AUTH_FAILED,
                   fmt::format("token file {} is {}, not a regular file", path, host::config::file_type_name(st.st_mode)));
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    throw LabError(proto::ERROR_AUTH_FAILED,
                   fmt::format("token file {} is accessible by its group or other users (mode {:o}): chmod 600 it",
                               path, st.st_mode & 0777));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw LabError(proto::ERROR_AUTH_FAILED, fmt::format("cannot open token file {}", path));
  std::ostringstream content;
  content << in.rdbuf();
  std::string token = content.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ' ||
                            token.back() == '\t')) {
    token.pop_back();
  }
  if (token.empty()) throw LabError(proto::ERROR_AUTH_FAILED, fmt::format("token file {} is empty", path));
  return token;
}

std::string random_nonce() {
  std::string nonce(kNonceBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(nonce.data()), static_cast<int>(nonce.size())) != 1) {
    throw LabError(proto::ERROR_INTERNAL, "OpenSSL RAND_bytes failed: no nonce");
  }
  return nonce;
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  std::string mac(EVP_MAX_MD_SIZE, '\0');
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(),
           reinterpret_cast<unsigned char*>(mac.data()), &length) == nullptr) {
    throw LabError(proto::ERROR_INTERNAL, "OpenSSL HMAC-SHA256 failed");
  }
  mac.resize(length);
  return mac;
}

std::string auth_mac(std::string_view token, std::string_view coordinator_nonce, std::string_view agent_nonce,
                     proto::Role role) {
  // Nonces have a fixed size (checked on receipt), so the concatenation is unambiguous.
  std::string data = "fabemu-lab-v1";
  data.append(coordinator_nonce);
  data.append(agent_nonce);
  data.append(role == proto::ROLE_AGENT ? "agent" : "coordinator");
  return hmac_sha256(token, data);
}

bool macs_equal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::chrono::milliseconds AuthFailureDelay::fail(const std::string& peer, Clock::time_point now) {
  constexpr auto kForget = std::chrono::seconds(60);
  constexpr std::size_t kMaxPeers = 4096;
  if (peers_.size() >= kMaxPeers && !peers_.contains(peer)) {
    std::erase_if(peers_, [&](const auto& p) { return now - p.second.last > kForget; });
    if (peers_.size() >= kMaxPeers) {
      const auto stalest = std::min_element(peers_.begin(), peers_.end(),
                                            [](const auto& a, const auto& b) { return a.second.last < b.second.last; });
      peers_.erase(stalest);
    }
  }
  Failures& f = peers_[peer];
  if (f.count > 0 && now - f.last > kForget) f.count = 0;
  f.count = std::min(f.count + 1, 64u);
  f.last = now;
  return base_ * (1u << std::min(f.count - 1, 5u));
}

}  // namespace fabemu::lab
