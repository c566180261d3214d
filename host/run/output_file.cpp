#include "host/run/output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "host/config/config_util.h"

namespace fabemu::run {

OutputFile::OutputFile(std::string path, std::string_view option) : path_(std::move(path)), option_(option) {
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    throw std::invalid_argument(fmt::format("{} {}: {}, not a regular file: give a file's path", option_, path_,
                                            host::config::file_type_name(st.st_mode)));
  }
  temp_ = path_ + ".fabemu-tmp-XXXXXX";
  fd_ = ::mkstemp(temp_.data());
  if (fd_ < 0) {
    const int err = errno;
    const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
    throw std::invalid_argument(fmt::format("{} {}: cannot create a file in {}: {}", option_, path_,
                                            parent.empty() ? std::string(".") : parent.string(), std::strerror(err)));
  }
  // mkstemp makes the file 0600; give it what a plain create would (0666 less the umask). Read at start-up,
  // before any thread exists: umask() sets while it reads.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd_, 0666 & ~mask);
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

void OutputFile::commit(const std::string& content) {
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw std::runtime_error(fmt::format("cannot write {} {}: {}", option_, path_, std::strerror(errno)));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::close(fd_) != 0) {
    fd_ = -1;
    ::unlink(temp_.c_str());
    throw std::runtime_error(fmt::format("cannot write {} {}: {}", option_, path_, std::strerror(errno)));
  }
  fd_ = -1;
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp_.c_str());
    throw std::runtime_error(fmt::format("cannot write {} {}: {}", option_, path_, std::strerror(err)));
  }
}

void write_via_temporary(const std::string& path, const std::function<void(const std::string&)>& write) {
  const std::filesystem::path target(path);
  const std::filesystem::path temp =
      target.parent_path() / fmt::format(".fabemu-tmp-{}-{}", ::getpid(), target.filename().string());
  try {
    write(temp.string());
    std::filesystem::rename(temp, target);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    throw;
  }
}

}  // namespace fabemu::run
