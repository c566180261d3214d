// The published nccl-tests tables in ../shared/calibration/nccl-tests: row counts, collective and values of
// every file, counted from the files themselves (awk over the rows after the column header).
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "host/nccl/nccl_tests_table.h"
#include "tests/support/test_support.h"

namespace fabemu::nccl {
namespace {

namespace fs = std::filesystem;

// ../shared/calibration/nccl-tests, the sibling of the shared traces folder.
std::optional<fs::path> calibration_dir() {
  const auto traces = test::shared_traces_dir();
  if (!traces) return std::nullopt;
  const fs::path p = traces->parent_path() / "calibration" / "nccl-tests";
  if (!fs::is_directory(p)) return std::nullopt;
  return p;
}

struct Spot {
  uint64_t line;
  uint64_t size_bytes;
  std::optional<uint64_t> count;
  std::optional<double> time_us_oop, busbw_oop, time_us_ip, busbw_ip;
};

struct Expected {
  std::string file;
  std::string collective;
  std::string redop;
  size_t rows;
  Spot first, spot, last;
};

// From the files: first row, the 1 MiB row (256 MiB for the GCP run, which starts at 8 MiB), last row.
const std::vector<Expected>& expected_tables() {
  static const std::vector<Expected> tables{
      {"a100_1n8_allreduce_azure-nda100v4.tsv", "all_reduce", "sum", 24,
       {12, 1024, {}, {}, {}, {}, 0.04},
       {22, 1048576, {}, {}, {}, {}, 36.22},
       {35, 8589934592, {}, {}, {}, {}, 231.58}},
      {"a100_1n8_allreduce_oci-bmgpu48.tsv", "all_reduce", "sum", 28,
       {11, 64, 16, 32.01, 0.00, 31.82, 0.00},
       {25, 1048576, 262144, 76.71, 23.92, 77.73, 23.61},
       {38, 8589934592, 2147483648, 63929, 235.14, 63911, 235.21}},
      {"a100_2n16_allreduce_aws-p4de-efa.tsv", "all_reduce", "sum", 29,
       {11, 8, 2, 164.3, 0.00, 163.3, 0.00},
       {28, 1048576, 262144, 309.4, 6.35, 307.3, 6.40},
       {39, 2147483648, 536870912, 51406, 78.33, 51406, 78.33}},
      {"h100_1n8_allreduce_nvls_azure-ndh100v5.tsv", "all_reduce", "sum", 24,
       {13, 1024, {}, {}, {}, {}, 0.07},
       {23, 1048576, {}, {}, {}, {}, 43.70},
       {36, 8589934592, {}, {}, {}, {}, 478.87}},
      {"h100_2n16_allgather_gcp-a3mega-tcpxo.tsv", "all_gather", "none", 11,
       {10, 8388608, 131072, 166.6, 47.19, 164.1, 47.92},
       {15, 268435456, 4194304, 1522.1, 165.34, 1518.7, 165.71},
       {20, 8589934592, 134217728, 42713, 188.54, 42701, 188.59}},
      {"h100_2n16_allreduce_aws-p5-efa.tsv", "all_reduce", "sum", 32,
       {11, 8, 2, 69.12, 0.00, 72.43, 0.00},
       {28, 1048576, 262144, 123.2, 15.95, 121.3, 16.21},
       {42, 17179869184, 4294967296, 66132, 487.09, 66109, 487.26}},
      {"rtx2080ti_1n2_allgather_pcie-nop2p.tsv", "all_gather", "none", 28,
       {10, 0, 0, 0.33, 0.00, 0.36, 0.00},
       {27, 1048576, 131072, 181.1, 2.89, 179.1, 2.93},
       {37, 1073741824, 134217728, 141614, 3.79, 139719, 3.84}},
      {"rtx2080ti_1n2_allreduce_pcie-nop2p.tsv", "all_reduce", "sum", 28,
       {10, 8, 2, 12.25, 0.00, 12.00, 0.00},
       {27, 1048576, 262144, 279.5, 3.75, 280.2, 3.74},
       {37, 1073741824, 268435456, 268588, 4.00, 268461, 4.00}},
  };
  return tables;
}

const NcclTestsRow* row_at(const NcclTestsTable& t, uint64_t line) {
  for (const auto& r : t.rows) {
    if (r.line == line) return &r;
  }
  return nullptr;
}

void expect_spot(const NcclTestsTable& t, const Expected& e, const Spot& s) {
  const NcclTestsRow* r = row_at(t, s.line);
  ASSERT_NE(r, nullptr) << e.file << ": no row at line " << s.line;
  SCOPED_TRACE(e.file + ": line " + std::to_string(s.line));
  EXPECT_EQ(r->size_bytes, s.size_bytes);
  EXPECT_EQ(r->count, s.count);
  EXPECT_EQ(r->type, "float");
  EXPECT_EQ(r->redop, e.redop);
  EXPECT_EQ(r->root, std::nullopt);
  EXPECT_EQ(r->time_us_oop, s.time_us_oop);
  EXPECT_EQ(r->busbw_oop, s.busbw_oop);
  EXPECT_EQ(r->time_us_ip, s.time_us_ip);
  EXPECT_EQ(r->busbw_ip, s.busbw_ip);
  // algbw is present exactly where the time is (the Azure tables publish the in-place busbw only).
  EXPECT_EQ(r->algbw_oop.has_value(), s.time_us_oop.has_value());
  EXPECT_EQ(r->algbw_ip.has_value(), s.time_us_ip.has_value());
}

TEST(NcclTestsShared, EveryCalibrationTable) {
  const auto dir = calibration_dir();
  if (!dir) GTEST_SKIP() << "../shared/calibration/nccl-tests is absent: calibration-table test skipped";
  size_t seen = 0;
  for (const auto& entry : fs::directory_iterator(*dir)) {
    if (entry.path().extension() == ".tsv") ++seen;
  }
  EXPECT_EQ(seen, expected_tables().size()) << "a table was added or removed: update expected_tables()";
  for (const Expected& e : expected_tables()) {
    const std::string path = (*dir / e.file).string();
    const NcclTestsTable t = read_nccl_tests(path);
    EXPECT_EQ(t.source, path);
    EXPECT_EQ(t.format, NcclTestsFormat::kCalibrationTsv) << e.file;
    EXPECT_EQ(t.collective, e.collective) << e.file;
    EXPECT_EQ(t.ranks, 0) << e.file;  // the TSVs say it in prose only
    ASSERT_EQ(t.rows.size(), e.rows) << e.file;
    EXPECT_EQ(t.rows.front().line, e.first.line) << e.file;
    EXPECT_EQ(t.rows.back().line, e.last.line) << e.file;
    expect_spot(t, e, e.first);
    expect_spot(t, e, e.spot);
    expect_spot(t, e, e.last);
    // Sizes never decrease (powers of two; the PCIe all-gather starts with two rows of 0 B).
    for (size_t i = 1; i < t.rows.size(); ++i) EXPECT_LE(t.rows[i - 1].size_bytes, t.rows[i].size_bytes) << e.file;
  }
}

}  // namespace
}  // namespace fabemu::nccl
