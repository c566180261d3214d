// The live progress line of a long `fabemu run` on stderr: emulated time reached, nodes walked, ranks
// finished, events per second and wall time, redrawn in place (carriage return, erase line) at most every
// 250 ms, and erased when the walk ends so that the final output is what it would be without it. Shown only
// when stderr is a terminal and the run is not --quiet (progress_wanted()).
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "emulator/walker.h"

namespace fabemu::run {

// Whether a run with these settings shows a progress line: not quiet, stderr a terminal, TERM not "dumb".
bool progress_wanted(bool quiet);

class ProgressLine final : public emu::ProgressListener {
 public:
  // Draws on `out` (stderr in fabemu; a test's file in the tests).
  explicit ProgressLine(std::FILE* out);
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() override { erase(); }

  void progress(const emu::WalkProgress& p) override;
  // Erases the line if one is drawn (the walk ended).
  void erase();

  // The line's text for `p` after `wall_s` seconds of wall time (no control characters).
  static std::string text(const emu::WalkProgress& p, double wall_s);

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kInterval{250};

  std::FILE* out_;
  Clock::time_point start_;
  Clock::time_point last_;
  bool drawn_ = false;
};

}  // namespace fabemu::run
