// One DPDK EAL per test process (EAL cannot start twice): a GoogleTest environment starts it without
// hugepages (FABEMU_DPDK_TEST_EAL_ARGS, space separated, replaces the arguments), and REQUIRE_EAL()
// skips a test with EAL's own message when it could not start here.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "host/dpdk/dpdk_env.h"

namespace fabemu::test {
// Why EAL did not start ("" when it did).
const std::string& eal_error();
// The EAL's lcore list (-l) instead of "0", for a test binary that needs more lcores (a list with "@" maps
// lcores to CPUs: --lcores, e.g. "0@0,1@1,2@1" for three lcores on two cores); call it before
// main() (a static initializer). FABEMU_DPDK_TEST_EAL_ARGS still replaces every argument.
bool request_eal_lcores(const std::string& list);
}  // namespace fabemu::test

#define REQUIRE_EAL()                                                                                   \
  do {                                                                                                  \
    if (!::fabemu::host::dpdk::Eal::running())                                                          \
      GTEST_SKIP() << "DPDK EAL could not start here: " << ::fabemu::test::eal_error();                \
  } while (0)
