// Helpers of the libFuzzer targets (tests/fuzz/README.md): a scratch folder for parsers that read a path,
// and the rule every target follows: the documented error types are answers, anything else is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

namespace fabemu::fuzz {

// A folder of this process (under $TMPDIR, /dev/shm when it exists), made on first use and removed at exit.
const std::string& scratch_dir();
// scratch_dir()/name, holding exactly `size` bytes of `data` (the file is rewritten on every call).
std::string write_scratch(const std::string& name, const uint8_t* data, size_t size);
std::string write_scratch(const std::string& name, std::string_view bytes);
// Removes everything in scratch_dir() (a target that writes several outputs calls it per input).
void clear_scratch();

// A finding: prints `what` and the exception's message, then aborts (libFuzzer keeps the input as a crash).
[[noreturn]] void finding(std::string_view what, std::string_view detail);
[[noreturn]] void unexpected_exception(std::exception_ptr e);

// Runs `body`; an exception of one of the types `Allowed...` (the parser's documented contract) is an
// answer and is swallowed; any other exception, std::bad_alloc included, is a finding.
template <typename... Allowed, typename Body>
void expect_only(Body&& body) {
  try {
    try {
      body();
    } catch (...) {
      // Rethrown into a chain of one handler per allowed type; the first that matches ends it.
      bool allowed = false;
      ([&]<typename E>() {
        if (allowed) return;
        try {
          throw;
        } catch (const E&) {
          allowed = true;
        } catch (...) {
        }
      }.template operator()<Allowed>(), ...);
      if (!allowed) throw;
    }
  } catch (...) {
    unexpected_exception(std::current_exception());
  }
}

}  // namespace fabemu::fuzz
