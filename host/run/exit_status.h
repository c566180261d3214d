// fabemu's exit statuses (README.md, "Exit status").
#pragma once

namespace fabemu::run {

inline constexpr int kExitOk = 0;        // the run completed
inline constexpr int kExitFindings = 1;  // the run ended with findings: a deadlock, lost ranks, a signal
inline constexpr int kExitError = 2;     // an error: bad input, a stalled wire, a failed output

}  // namespace fabemu::run
