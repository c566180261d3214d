// `fabemu compare A.json B.json`: two run reports side by side, and a regression gate for CI.
#include <fmt/core.h>

#include <cmath>
#include <iostream>
#include <string>
#include <memory>
#include <optional>

#include "emulator/report_json.h"
#include "emulator/summary.h"
#include "host/cli/commands.h"

namespace fabemu::cli {

void add_compare_command(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand(
      "compare", "Compare two run reports (fabemu run --report): total time, collectives by type, per rank");
  auto a = std::make_shared<std::string>();
  auto b = std::make_shared<std::string>();
  auto max_regression = std::make_shared<double>(0.0);
  auto per_rank = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  cmd->add_option("baseline", *a, "Report A (the baseline), JSON from fabemu run")->required();
  cmd->add_option("candidate", *b, "Report B (the candidate), compared against A")->required();
  auto* gate = cmd->add_option("--max-regression", *max_regression,
                               "Exit 1 when B's total time is more than PCT percent above A's")
                   ->type_name("PCT")
                   ->check(CLI::Validator(
                       [](std::string& v) -> std::string {
                         double x = -1;
                         try {
                           size_t used = 0;
                           x = std::stod(v, &used);
                           if (used != v.size()) x = -1;
                         } catch (const std::exception&) {
                           x = -1;
                         }
                         return std::isfinite(x) && x >= 0 ? std::string()
                                                            : "expected a percentage of 0 or more, got " + v;
                       },
                       "PCT >= 0"));
  cmd->add_flag("--per-rank", *per_rank, "Also compare every rank's finish time");
  cmd->add_flag("--json", *json, "Print the comparison as JSON");
  cmd->callback([=, &status] {
    // Unreadable or malformed reports throw traces::TraceError: main prints it and exits 2.
    const emu::RunResult ra = emu::read_report_file(*a);
    const emu::RunResult rb = emu::read_report_file(*b);
    emu::CompareOptions options;
    options.per_rank = *per_rank;
    if (gate->count() != 0) options.max_regression_pct = *max_regression;
    if (*json) {
      std::cout << emu::comparison_to_json(ra, rb, *a, *b, options);
    } else {
      std::cout << emu::format_comparison(ra, rb, *a, *b, options);
    }
    std::cout.flush();
    status = options.max_regression_pct && emu::fails_gate(ra, rb, *options.max_regression_pct) ? kExitFindings
                                                                                                 : kExitOk;
  });
}

}  // namespace fabemu::cli
