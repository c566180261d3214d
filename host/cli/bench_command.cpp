// `fabemu bench collective`: nccl-tests' sweep on a system in NCCL's or ASTRA-sim's semantics (host/nccl/collective_bench.h).
#include <fmt/core.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "emulator/nccl_model.h"
#include "host/cli/commands.h"
#include "host/config/fabric_config.h"
#include "host/nccl/collective_bench.h"
#include "host/nccl/nccl_tests_table.h"
#include "emulator/report_json.h"
#include "host/run/output_file.h"
#include "host/run/run.h"
#include "traces/generate.h"

namespace fabemu::cli {
namespace {

struct BenchArgs {
  std::string collective = "all_reduce";
  std::string system;
  std::string min_bytes = "8", max_bytes = "8G", step_bytes;
  uint64_t step_factor = 2;
  std::string datatype = "float", op = "sum";
  std::string algos, protos;
  std::string json, csv, compare;
  std::string semantics = "nccl", model;
  bool quiet = false;
};

// A scratch folder for the ASTRA-sim semantics' traces and reports, removed with it.
struct ScratchFolder {
  std::string path;
  ScratchFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "fabemu-bench-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a folder in " + pattern);
    path = pattern;
  }
  ~ScratchFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
};

// ASTRA-sim's semantics: each size as a one-collective microbenchmark (fabemu trace generate collective's
// traces) walked by fabemu run on the system's fabric file (its topology, collectives, chunks; the analytical
// model unless --model), the collective's duration (from the last member's issue) as nccl-tests' time.
nccl::RowAt astra_rows(const BenchArgs& a, const nccl::SweepOptions& o, int32_t ranks, const std::string& dir) {
  const auto type = traces::collective_from_name(emu::nccl::func_name(o.func));
  if (!type || o.func == emu::nccl::Func::kBroadcast || o.func == emu::nccl::Func::kReduce) {
    throw std::invalid_argument("--semantics astra runs all_reduce, all_gather and reduce_scatter");
  }
  return [&a, &o, ranks, dir, type](uint64_t bytes, uint64_t count) {
    traces::CollectiveSpec spec;
    spec.type = *type;
    spec.ranks = ranks;
    // ASTRA-sim's comm_size of an all-gather is each rank's input; nccl-tests' size is the gathered whole.
    spec.size_bytes = o.func == emu::nccl::Func::kAllGather ? bytes / static_cast<uint64_t>(ranks) : bytes;
    const std::string prefix = dir + "/c";
    traces::generate_collective(spec, prefix);
    run::RunArgs r;
    r.workload = prefix;
    r.fabric_config = a.system;
    r.model = a.model;
    r.quiet = true;
    r.report = dir + "/report.json";
    if (run::run_workload(r) != kExitOk) {
      throw std::runtime_error(fmt::format("{}: the run of {} bytes did not complete", a.system, bytes));
    }
    const emu::RunResult res = emu::read_report_file(r.report);
    if (res.collectives.size() != 1) throw std::runtime_error("the run's report has no collective");
    const auto& c = res.collectives.front();
    return nccl::timed_row(o, ranks, bytes, count, static_cast<double>(c.duration().ps()) / 1e6, "astra:" + c.algorithm);
  };
}

std::string describe(const emu::nccl::System& s, bool validated) {
  return fmt::format("{} ranks: {} node{} x {} GPUs{}", s.ranks(), s.nodes, s.nodes == 1 ? "" : "s", s.gpus_per_node,
                     validated ? "" : "; UNVALIDATED system (stated from public specs, never checked against a run)");
}

int run_bench(const BenchArgs& a) {
  const host::FabricFile fabric = host::load_fabric_yaml(a.system);
  if (!fabric.nccl) {
    throw std::invalid_argument(a.system + ": no \"nccl:\" section; the systems of traces/systems/ have one (docs/nccl.md)");
  }
  emu::nccl::System sys = *fabric.nccl;
  emu::nccl::apply_lists(sys, a.algos, a.protos, "--algo: ", "--proto: ");
  const emu::nccl::Model model(sys);
  if (!a.model.empty() && a.semantics != "astra") throw std::invalid_argument("--model applies to --semantics astra");

  nccl::SweepOptions o;
  const auto func = emu::nccl::func_named(a.collective);
  if (!func) {
    throw std::invalid_argument("unknown collective \"" + a.collective +
                                "\"; expected all_reduce, all_gather, reduce_scatter, broadcast or reduce");
  }
  o.func = *func;
  o.min_bytes = traces::parse_size(a.min_bytes);
  o.max_bytes = traces::parse_size(a.max_bytes);
  o.step_bytes = a.step_bytes.empty() ? 0 : traces::parse_size(a.step_bytes);
  o.step_factor = a.step_factor;
  o.datatype = a.datatype;
  o.op = a.op;
  nccl::datatype_bytes(o.datatype);  // checks the name before any output

  // Checked before the sweep, so a path that cannot be written fails first (host/run/output_file.h).
  std::unique_ptr<run::OutputFile> csv, json;
  if (!a.csv.empty()) csv = std::make_unique<run::OutputFile>(a.csv, "--csv");
  if (!a.json.empty()) json = std::make_unique<run::OutputFile>(a.json, "--json");
  const int32_t ranks = sys.ranks();
  std::optional<ScratchFolder> scratch;
  nccl::RowAt row_at;
  if (a.semantics == "astra") {
    scratch.emplace();
    row_at = astra_rows(a, o, ranks, scratch->path);
  } else {
    row_at = nccl::model_rows(model, o);
  }
  const auto rows = nccl::run_sweep(row_at, o, ranks);
  const std::string title = fmt::format("fabemu bench collective: {} on {} ({}), {} semantics",
                                        emu::nccl::func_name(o.func), a.system, describe(sys, fabric.nccl_validated),
                                        a.semantics == "astra" ? "ASTRA-sim" : "NCCL");
  if (!a.quiet) std::cout << nccl::format_table(rows, o, title);
  if (csv) csv->commit(nccl::sweep_csv(rows, o));
  if (json) json->commit(nccl::sweep_json(rows, o, ranks, a.semantics, a.system));
  if (!a.compare.empty()) {
    const auto real = nccl::read_nccl_tests(a.compare);
    // nccl-tests prints its own process's GPUs (nGpus); under mpirun each process has one, so only a
    // larger count that differs is worth a word.
    if (real.ranks > 1 && real.ranks != ranks) {
      std::cout << fmt::format("# note: {} reports {} ranks, the system has {}\n", a.compare, real.ranks, ranks);
    }
    std::cout << nccl::format_comparison(nccl::compare_with(row_at, o, ranks, real), real);
  }
  std::cout.flush();
  return kExitOk;
}

}  // namespace

void add_bench_command(CLI::App& app, int& status) {
  auto* bench = app.add_subcommand("bench", "Benchmarks in emulation");
  bench->require_subcommand(1);
  auto* cmd = bench->add_subcommand(
      "collective", "nccl-tests' sweep on a system in NCCL's semantics (its cost model) or ASTRA-sim's: nccl-tests' table, "
                    "CSV/JSON, --compare REAL");
  auto a = std::make_shared<BenchArgs>();
  cmd->add_option("collective", a->collective,
                  "all_reduce (default), all_gather, reduce_scatter, broadcast or reduce (all_reduce_perf works too)");
  cmd->add_option("-s,--system", a->system, "Fabric file with an nccl: section (traces/systems/*.yaml)")->required();
  cmd->add_option("-b,--minbytes", a->min_bytes, "Smallest size, nccl-tests' -b (8, 64K, 1M, 2G; K/M/G = 1024^n)")
      ->capture_default_str();
  cmd->add_option("-e,--maxbytes", a->max_bytes, "Largest size, nccl-tests' -e")->capture_default_str();
  cmd->add_option("-f,--stepfactor", a->step_factor, "Multiply the size by this each step, nccl-tests' -f")
      ->capture_default_str();
  cmd->add_option("-i,--stepbytes", a->step_bytes, "Add this each step instead of -f, nccl-tests' -i");
  cmd->add_option("-d,--datatype", a->datatype, "Element type, nccl-tests' -d (float, half, bfloat16, double, int8 ...)")
      ->capture_default_str();
  cmd->add_option("-o,--op", a->op, "Reduction shown in the redop column, nccl-tests' -o")->capture_default_str();
  cmd->add_option("--algo", a->algos,
                  "Algorithms the tuner may pick, as NCCL_ALGO: ring,tree,nvls,nvls_tree,collnet_direct,collnet_chain "
                  "or ^excluded; per collective after ';': ring;allreduce:tree");
  cmd->add_option("--proto", a->protos, "Protocols the tuner may pick, as NCCL_PROTO: LL,LL128,Simple or ^excluded; per collective: "
                  "^LL128;allreduce:LL128");
  cmd->add_option("--json", a->json, "Write the sweep as JSON (docs/nccl.md)");
  cmd->add_option("--csv", a->csv, "Write the sweep as CSV");
  cmd->add_option("--compare", a->compare,
                  "A real nccl-tests output (or a calibration .tsv): per-size error of time and busbw, median and max");
  cmd->add_option("--semantics", a->semantics,
                  "nccl: NCCL's cost model (the nccl: section); astra: ASTRA-sim's semantics, a fabemu run per size on "
                  "the file's topology")
      ->check(CLI::IsMember({"nccl", "astra"}))
      ->capture_default_str();
  cmd->add_option("-m,--model", a->model, "With --semantics astra: analytical (default) or packet")
      ->check(CLI::IsMember({"analytical", "packet"}));
  cmd->add_flag("-q,--quiet", a->quiet, "Do not print the table (--compare still prints)");
  cmd->callback([a, &status] {
    try {
      status = run_bench(*a);
    } catch (const std::invalid_argument& e) {
      throw CLI::ValidationError("bench collective", e.what());
    }  // a file's located error (traces::TraceError) and a failed run reach main, which prints them (exit 2)
  });
}

}  // namespace fabemu::cli
