// Helpers shared by the benchmark programs.
#pragma once

#include <malloc.h>
#include <sys/resource.h>

#include <fstream>

namespace fabemu::bench {

// Peak RSS is per benchmark: free heap goes back to the kernel and its high-water mark is reset to
// the current RSS before each one (Linux >= 4.0); where that is refused, ru_maxrss is the process's
// peak so far.
inline void reset_peak_rss() {
  malloc_trim(0);
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

inline double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

}  // namespace fabemu::bench
