#include "host/nccl/collective_bench.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fabemu::nccl {
namespace {

using emu::nccl::Func;

constexpr size_t kMaxSizes = 10'000;
constexpr uint64_t kSmallBytes = 64 * 1024;  // the comparison's split: time below, busbw at and above

bool per_rank_count(Func f) { return f == Func::kAllGather || f == Func::kReduceScatter; }

// nccl-tests' time column: 2 decimals below 100 us, 1 below 10 ms, none above.
std::string time_text(double us) {
  if (us >= 10000.0) return fmt::format("{:7.0f}", us);
  if (us >= 100.0) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

std::string size_text(uint64_t b) {
  if (b >= (uint64_t{1} << 30) && b % (uint64_t{1} << 30) == 0) return fmt::format("{} GiB", b >> 30);
  if (b >= (uint64_t{1} << 20) && b % (uint64_t{1} << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

}  // namespace

uint64_t datatype_bytes(const std::string& type) {
  if (type == "int8" || type == "uint8" || type == "char") return 1;
  if (type == "half" || type == "float16" || type == "bfloat16") return 2;
  if (type == "int32" || type == "uint32" || type == "int" || type == "float" || type == "float32") return 4;
  if (type == "int64" || type == "uint64" || type == "double" || type == "float64") return 8;
  throw std::invalid_argument("unknown data type \"" + type +
                              "\"; expected int8, uint8, half, bfloat16, int32, uint32, float, int64, uint64 or double");
}

SweepRow model_row(const emu::nccl::Model& model, const SweepOptions& o, uint64_t size_bytes) {
  const int32_t n = model.system().ranks();
  const uint64_t elem = datatype_bytes(o.datatype);
  const uint64_t unit = per_rank_count(o.func) ? elem * static_cast<uint64_t>(n) : elem;
  SweepRow r;
  r.count = size_bytes / unit;
  r.size_bytes = r.count * unit;
  const auto c = model.choose(o.func, r.size_bytes);
  if (!c) {
    throw std::invalid_argument(fmt::format("{}: no algorithm/protocol of the system can run it (see --algo/--proto)",
                                            emu::nccl::func_name(o.func)));
  }
  r.choice = *c;
  r.time_us = static_cast<double>(c->time.ps()) / 1e6;
  r.algbw = r.time_us > 0 ? static_cast<double>(r.size_bytes) / (r.time_us * 1e3) : 0;
  r.busbw = r.algbw * emu::nccl::bus_factor(o.func, n);
  return r;
}

std::vector<SweepRow> run_sweep(const emu::nccl::Model& model, const SweepOptions& o) {
  if (o.min_bytes > o.max_bytes) throw std::invalid_argument("the minimum size (-b) is above the maximum (-e)");
  if (o.step_bytes == 0 && o.step_factor < 2) throw std::invalid_argument("the step factor (-f) must be at least 2");
  std::vector<SweepRow> rows;
  for (uint64_t size = o.min_bytes; size <= o.max_bytes;) {
    if (rows.size() == kMaxSizes) throw std::invalid_argument("the sweep has more than 10,000 sizes");
    rows.push_back(model_row(model, o, size));
    const uint64_t next = o.step_bytes != 0 ? size + o.step_bytes : size * o.step_factor;
    if (next <= size || (o.step_bytes == 0 && size == 0)) break;  // overflow, or 0 * factor
    size = next;
  }
  return rows;
}

std::string format_table(const std::vector<SweepRow>& rows, const SweepOptions& o, const std::string& title) {
  std::string out = "# " + title + "\n#\n";
  out += "#                                                              out-of-place                       in-place          \n";
  out += "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
  out += "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n";
  const std::string redop = per_rank_count(o.func) && o.func == Func::kAllGather ? "none" : o.op;
  const int root = o.func == Func::kBroadcast || o.func == Func::kReduce ? 0 : -1;
  double sum = 0;
  for (const auto& r : rows) {
    const std::string half = fmt::format("  {}  {:6.2f}  {:6.2f}  {:>5}", time_text(r.time_us), r.algbw, r.busbw, "N/A");
    out += fmt::format("{:12}  {:12}  {:>8}  {:>6}  {:6}{}{}\n", r.size_bytes, r.count, o.datatype, redop, root, half, half);
    sum += r.busbw;
  }
  out += "# Out of bounds values : 0 OK\n";
  out += fmt::format("# Avg bus bandwidth    : {:.6g} \n", rows.empty() ? 0.0 : sum / static_cast<double>(rows.size()));
  out += "#\n# fabemu: algorithm/protocol by size (NCCL's tuner in the model)\n";
  for (size_t i = 0; i < rows.size();) {
    size_t j = i;
    while (j + 1 < rows.size() && rows[j + 1].choice.algo == rows[i].choice.algo &&
           rows[j + 1].choice.proto == rows[i].choice.proto) {
      ++j;
    }
    out += fmt::format("#   {:>9} .. {:<9} {}/{}\n", size_text(rows[i].size_bytes), size_text(rows[j].size_bytes),
                       emu::nccl::algo_name(rows[i].choice.algo), emu::nccl::proto_name(rows[i].choice.proto));
    i = j + 1;
  }
  return out;
}

std::string sweep_csv(const std::vector<SweepRow>& rows, const SweepOptions& o) {
  std::string out = "size_bytes,count,type,redop,time_us,algbw_GBps,busbw_GBps,algorithm,protocol\n";
  for (const auto& r : rows) {
    out += fmt::format("{},{},{},{},{:.3f},{:.4f},{:.4f},{},{}\n", r.size_bytes, r.count, o.datatype, o.op, r.time_us,
                       r.algbw, r.busbw, emu::nccl::algo_name(r.choice.algo), emu::nccl::proto_name(r.choice.proto));
  }
  return out;
}

std::string sweep_json(const std::vector<SweepRow>& rows, const SweepOptions& o, const emu::nccl::System& s,
                       const std::string& system_file) {
  nlohmann::json j;
  j["collective"] = emu::nccl::func_name(o.func);
  j["system"] = system_file;
  j["ranks"] = s.ranks();
  j["nodes"] = s.nodes;
  j["gpus_per_node"] = s.gpus_per_node;
  j["datatype"] = o.datatype;
  j["op"] = o.op;
  auto& out = j["rows"] = nlohmann::json::array();
  for (const auto& r : rows) {
    out.push_back({{"size_bytes", r.size_bytes},
                   {"count", r.count},
                   {"time_ps", r.choice.time.ps()},
                   {"time_us", r.time_us},
                   {"algbw_GBps", r.algbw},
                   {"busbw_GBps", r.busbw},
                   {"algorithm", emu::nccl::algo_name(r.choice.algo)},
                   {"protocol", emu::nccl::proto_name(r.choice.proto)},
                   {"latency_us", r.choice.latency_us},
                   {"bandwidth_GBps", r.choice.algbw_gbps}});
  }
  return j.dump(2) + "\n";
}

Comparison compare_with(const emu::nccl::Model& model, const SweepOptions& o, const NcclTestsTable& real) {
  if (!real.collective.empty() && emu::nccl::func_named(real.collective) != o.func) {
    throw std::invalid_argument(fmt::format("{}: the table is a {} run, not {}", real.source, real.collective,
                                            emu::nccl::func_name(o.func)));
  }
  const double factor = emu::nccl::bus_factor(o.func, model.system().ranks());
  Comparison c;
  std::vector<double> bus_err, time_err;
  for (const auto& row : real.rows) {
    if (row.size_bytes == 0) continue;
    const SweepRow m = model_row(model, o, row.size_bytes);
    CompareRow r;
    r.size_bytes = row.size_bytes;
    r.model_time_us = m.time_us;
    r.model_busbw = m.busbw;
    r.algo = m.choice.algo;
    r.proto = m.choice.proto;
    const auto busbw = row.busbw_oop ? row.busbw_oop : row.busbw_ip;
    const auto time = row.time_us_oop ? row.time_us_oop : row.time_us_ip;
    r.real_busbw = busbw.value_or(0);
    if (time) {
      r.real_time_us = *time;
    } else if (r.real_busbw > 0) {
      r.real_time_us = static_cast<double>(row.size_bytes) / (r.real_busbw / factor * 1e3);
    }
    if (r.real_time_us > 0) r.time_error = r.model_time_us / r.real_time_us - 1;
    if (r.real_busbw > 0) r.busbw_error = r.model_busbw / r.real_busbw - 1;
    if (row.size_bytes >= kSmallBytes && r.real_busbw > 0) bus_err.push_back(std::fabs(r.busbw_error));
    if (row.size_bytes < kSmallBytes && r.real_time_us > 0) time_err.push_back(std::fabs(r.time_error));
    c.rows.push_back(r);
  }
  c.busbw_sizes = bus_err.size();
  c.time_sizes = time_err.size();
  c.busbw_median = median(bus_err);
  c.time_median = median(time_err);
  c.busbw_max = bus_err.empty() ? 0 : *std::max_element(bus_err.begin(), bus_err.end());
  c.time_max = time_err.empty() ? 0 : *std::max_element(time_err.begin(), time_err.end());
  return c;
}

std::string format_comparison(const Comparison& c, const NcclTestsTable& real) {
  std::string out = fmt::format("# compared with {}\n", real.source);
  out += "#       size   real time  model time   error   real busbw  model busbw   error  model\n";
  out += "#        (B)        (us)        (us)              (GB/s)       (GB/s)\n";
  for (const auto& r : c.rows) {
    out += fmt::format("{:12}  {:>10}  {:>10}  {:+6.1f}%  {:>11.2f}  {:>11.2f}  {:+6.1f}%  {}/{}\n", r.size_bytes,
                       time_text(r.real_time_us), time_text(r.model_time_us), r.time_error * 100, r.real_busbw,
                       r.model_busbw, r.busbw_error * 100, emu::nccl::algo_name(r.algo), emu::nccl::proto_name(r.proto));
  }
  out += fmt::format("# busbw |error|, sizes >= 64 KiB ({}): median {:.1f}%, max {:.1f}%\n", c.busbw_sizes,
                     c.busbw_median * 100, c.busbw_max * 100);
  out += fmt::format("# time |error|, sizes < 64 KiB ({}): median {:.1f}%, max {:.1f}%\n", c.time_sizes,
                     c.time_median * 100, c.time_max * 100);
  return out;
}

}  // namespace fabemu::nccl
