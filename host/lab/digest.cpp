#include "host/lab/digest.h"

#include <fmt/core.h>
#include <openssl/evp.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

#include "host/lab/error.h"

namespace fabemu::lab {

namespace {

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxDeleter>;

MdCtx new_ctx() {
  MdCtx ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    throw LabError(proto::ERROR_INTERNAL, "SHA-256: cannot initialise OpenSSL's digest");
  }
  return ctx;
}

std::string finish_digest(EVP_MD_CTX* ctx) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx, md.data(), &n) != 1) throw LabError(proto::ERROR_INTERNAL, "SHA-256 failed");
  return std::string(reinterpret_cast<const char*>(md.data()), n);
}

}  // namespace

std::string sha256(std::string_view bytes) {
  MdCtx ctx = new_ctx();
  if (EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size()) != 1) throw LabError(proto::ERROR_INTERNAL, "SHA-256 failed");
  return finish_digest(ctx.get());
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw LabError(proto::ERROR_RUN_FAILED, fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  MdCtx ctx = new_ctx();
  std::array<char, 1 << 16> buffer{};
  while (in) {
    in.read(buffer.data(), buffer.size());
    const auto got = in.gcount();
    if (got > 0 && EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<size_t>(got)) != 1) {
      throw LabError(proto::ERROR_INTERNAL, "SHA-256 failed");
    }
  }
  if (in.bad()) throw LabError(proto::ERROR_RUN_FAILED, fmt::format("{}: read error", path));
  return finish_digest(ctx.get());
}

std::string to_hex(std::string_view bytes) {
  std::string out;
  out.reserve(2 * bytes.size());
  for (const char c : bytes) out += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return out;
}

}  // namespace fabemu::lab
