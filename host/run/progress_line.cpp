#include "host/run/progress_line.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "emulator/summary.h"

namespace fabemu::run {

bool progress_wanted(bool quiet) {
  if (quiet || isatty(STDERR_FILENO) == 0) return false;
  const char* term = std::getenv("TERM");
  return term == nullptr || std::strcmp(term, "dumb") != 0;
}

ProgressLine::ProgressLine(std::FILE* out) : out_(out), start_(Clock::now()), last_(start_ - kInterval) {}

std::string ProgressLine::text(const emu::WalkProgress& p, double wall_s) {
  const double rate = wall_s > 0 ? static_cast<double>(p.events) / wall_s : 0;
  return fmt::format("fabemu: emulated {}, {} nodes walked, {} of {} ranks finished, {:.2f} M events/s, wall {:.1f} s",
                     emu::format_ps(p.now.ps()), p.nodes_done, p.ranks_finished, p.ranks, rate / 1e6, wall_s);
}

void ProgressLine::progress(const emu::WalkProgress& p) {
  const Clock::time_point now = Clock::now();
  if (now - last_ < kInterval) return;
  last_ = now;
  const double wall_s = std::chrono::duration<double>(now - start_).count();
  fmt::print(out_, "\r\033[K{}", text(p, wall_s));
  std::fflush(out_);
  drawn_ = true;
}

void ProgressLine::erase() {
  if (!drawn_) return;
  fmt::print(out_, "\r\033[K");
  std::fflush(out_);
  drawn_ = false;
}

}  // namespace fabemu::run
