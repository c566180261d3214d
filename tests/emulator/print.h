// gtest printers for the emulator's strong types, so failures show picoseconds instead of bytes.
#pragma once

#include <ostream>

#include "emulator/time.h"

namespace fabemu::emu {

inline void PrintTo(Time t, std::ostream* os) { *os << "t=" << t.ps() << " ps"; }
inline void PrintTo(Duration d, std::ostream* os) { *os << d.ps() << " ps"; }
inline void PrintTo(Rate r, std::ostream* os) { *os << r.ps_per_byte_q32() << "/2^32 ps/byte"; }

}  // namespace fabemu::emu
