#include "tests/fuzz/fuzz_support.h"

#include <google/protobuf/stubs/logging.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <typeinfo>

namespace fabemu::fuzz {
namespace fs = std::filesystem;

// libprotobuf logs every string field with invalid UTF-8 it parses (an error the parsers report themselves):
// millions of lines in a fuzz run. Silenced for every target (all link this file).
[[maybe_unused]] const bool kProtobufQuiet = [] {
  google::protobuf::SetLogHandler(nullptr);
  return true;
}();

const std::string& scratch_dir() {
  // Never destroyed: the exit handler below needs it after static destructors may have run.
  static const std::string* const dir = new std::string([] {
    std::string base = fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path().string();
    if (const char* t = std::getenv("FABEMU_FUZZ_TMPDIR"); t != nullptr && *t != '\0') base = t;
    std::string templ = base + "/fabemu-fuzz-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) {
      std::perror("fabemu fuzz: mkdtemp");
      std::abort();
    }
    return templ;
  }());
  static const bool cleanup = [] {
    return std::atexit([] {
      std::error_code ec;
      fs::remove_all(*dir, ec);
    }) == 0;
  }();
  (void)cleanup;
  return *dir;
}

std::string write_scratch(const std::string& name, const uint8_t* data, size_t size) {
  return write_scratch(name, std::string_view(reinterpret_cast<const char*>(data), size));
}

std::string write_scratch(const std::string& name, std::string_view bytes) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) {
    std::perror(("fabemu fuzz: writing " + path).c_str());
    std::abort();
  }
  return path;
}

void clear_scratch() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(scratch_dir(), ec)) fs::remove_all(entry.path(), ec);
}

void finding(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "fabemu fuzz: FINDING: %.*s: %.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(detail.size()), detail.data());
  std::fflush(stderr);
  std::abort();
}

void unexpected_exception(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    finding(std::string("undocumented exception ") + typeid(ex).name(), ex.what());
  } catch (...) {
    finding("undocumented exception", "not a std::exception");
  }
}

}  // namespace fabemu::fuzz
