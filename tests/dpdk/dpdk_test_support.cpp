#include "tests/dpdk/dpdk_test_support.h"

#include <cstdlib>
#include <exception>
#include <sstream>
#include <vector>

namespace fabemu::test {
namespace {

std::string g_eal_error;

std::string& lcores() {
  static std::string list;  // a function-local static: usable from other translation units' initializers
  return list;
}

class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    std::vector<std::string> args = host::dpdk::Eal::no_huge_args();
    if (!lcores().empty()) {
      for (size_t i = 0; i + 1 < args.size(); ++i) {
        if (args[i] != "-l") continue;
        // A map of lcores to CPUs (more lcores than this machine has cores): EAL's --lcores.
        if (lcores().find('@') != std::string::npos) args[i] = "--lcores";
        args[i + 1] = lcores();
      }
    }
    if (const char* env = std::getenv("FABEMU_DPDK_TEST_EAL_ARGS"); env != nullptr) {
      args.clear();
      std::istringstream words(env);
      for (std::string w; words >> w;) args.push_back(w);
    }
    try {
      host::dpdk::Eal::start(args);
    } catch (const std::exception& e) {
      g_eal_error = e.what();
    }
  }
  void TearDown() override { host::dpdk::Eal::shutdown(); }
};
const auto* const g_env = ::testing::AddGlobalTestEnvironment(new EalEnvironment);

}  // namespace

const std::string& eal_error() { return g_eal_error; }

bool request_eal_lcores(const std::string& list) {
  lcores() = list;
  return true;
}

}  // namespace fabemu::test
