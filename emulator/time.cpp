#include "emulator/time.h"

#include <sstream>
#include <stdexcept>

namespace fabemu::emu::detail {

void throw_bad_rate(const char* constructor, double value, const char* why) {
  std::ostringstream msg;
  msg.precision(17);
  msg << constructor << "(" << value << "): the rate " << why;
  throw std::invalid_argument(msg.str());
}

}  // namespace fabemu::emu::detail
