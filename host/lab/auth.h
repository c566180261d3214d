// Shared-token authentication of the lab control plane: token files, nonces and the HMAC proofs.
// The token never crosses the wire; each side proves it knows the token by an HMAC over both fresh nonces.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "host/lab/lab.pb.h"

namespace fabemu::lab {

inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kMacBytes = 32;  // SHA-256

// Reads the shared token: the file's content without trailing whitespace. Throws LabError when the file
// is missing or unreadable, the token is empty, or the file is readable by others (chmod 600 it).
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

}  // namespace fabemu::lab
