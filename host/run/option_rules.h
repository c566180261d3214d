// The rules of `fabemu run`'s options that no single option's check can see: options given for a fabric that
// does not use them, options that contradict each other, and what a lab run (--agents) takes.
#pragma once

#include "host/run/run_args.h"

namespace fabemu::run {

// Throws std::invalid_argument naming the options (never silently ignores one).
void check_options(const RunArgs& a);

}  // namespace fabemu::run
