#include "host/lab/digest.h"

#include <fmt/core.h>
#include <openssl/evp.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

#include "host/config/config_util.h"
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

namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};


}  // namespace

std::string sha256_file(const std::string& path, const std::atomic<bool>* cancel, std::uint64_t* bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; a regular file ignores it.
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (file.fd < 0) {
    throw LabError(proto::ERROR_RUN_FAILED, fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) {
    throw LabError(proto::ERROR_RUN_FAILED, fmt::format("{}: cannot stat: {}", path, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    throw LabError(proto::ERROR_RUN_FAILED,
                   fmt::format("{}: is {}, not a regular file: a trace must be a regular file", path,
                               host::config::file_type_name(st.st_mode)));
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  MdCtx ctx = new_ctx();
  std::array<char, 1 << 16> buffer{};
  std::uint64_t done = 0;
  while (done < size) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      throw LabError(proto::ERROR_RUN_FAILED,
                     fmt::format("{}: hashing cancelled after {} of {} bytes", path, done, size));
    }
    const ssize_t got = ::read(file.fd, buffer.data(), static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), size - done)));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw LabError(proto::ERROR_RUN_FAILED, fmt::format("{}: read error: {}", path, std::strerror(errno)));
    if (got == 0) break;  // shrank meanwhile: the digest will not match
    if (EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<std::size_t>(got)) != 1) {
      throw LabError(proto::ERROR_INTERNAL, "SHA-256 failed");
    }
    done += static_cast<std::uint64_t>(got);
  }
  if (bytes != nullptr) *bytes = done;
  return finish_digest(ctx.get());
}

std::string to_hex(std::string_view bytes) {
  std::string out;
  out.reserve(2 * bytes.size());
  for (const char c : bytes) out += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return out;
}

}  // namespace fabemu::lab
