// nccl-tests output as the benchmarks print it (the layouts of nccl-tests 2.13 and later, and before), launcher
// prefixes, NCCL's log lines, fabemu's calibration TSV.
#include <gtest/gtest.h>

#include <string>

#include "host/nccl/nccl_tests_table.h"

namespace fabemu::nccl {
namespace {

// nccl-tests 2.13+ (with root), 4 ranks in one process, #wrong a count and N/A (-c 0).
constexpr const char* kNewer = R"(# nccl-tests version 2.13.8 nccl-headers=21903 nccl-library=21903
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 4 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  41234 on     node-a device  0 [0x1b] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  41234 on     node-a device  1 [0x43] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid  41234 on     node-a device  2 [0x52] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid  41234 on     node-a device  3 [0x61] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    36.06    0.00    0.00      0    35.79    0.00    0.00      0
     1048576        262144     float     sum      -1    45.12   23.24   34.86    N/A    44.98   23.31   34.97    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 17.4575
#
# Collective test concluded: all_reduce_perf
)";

TEST(NcclTestsOutput, NewerFormatWithRootAndNA) {
  const NcclTestsTable t = parse_nccl_tests(kNewer, "newer.txt");
  EXPECT_EQ(t.source, "newer.txt");
  EXPECT_EQ(t.format, NcclTestsFormat::kNcclTestsOutput);
  EXPECT_EQ(t.collective, "all_reduce");
  EXPECT_EQ(t.ranks, 4);
  ASSERT_EQ(t.rows.size(), 2u);
  const NcclTestsRow& a = t.rows[0];
  EXPECT_EQ(a.line, 14u);
  EXPECT_EQ(a.size_bytes, 8u);
  EXPECT_EQ(a.count, 2u);
  EXPECT_EQ(a.type, "float");
  EXPECT_EQ(a.redop, "sum");
  EXPECT_EQ(a.root, -1);
  EXPECT_EQ(a.time_us_oop, 36.06);
  EXPECT_EQ(a.time_us_ip, 35.79);
  const NcclTestsRow& b = t.rows[1];
  EXPECT_EQ(b.line, 15u);
  EXPECT_EQ(b.size_bytes, 1048576u);
  EXPECT_EQ(b.count, 262144u);
  EXPECT_EQ(b.time_us_oop, 45.12);
  EXPECT_EQ(b.algbw_oop, 23.24);
  EXPECT_EQ(b.busbw_oop, 34.86);
  EXPECT_EQ(b.time_us_ip, 44.98);
  EXPECT_EQ(b.algbw_ip, 23.31);
  EXPECT_EQ(b.busbw_ip, 34.97);
}

// Before nccl-tests 2.13: no root column, the largest error instead of #wrong; the device lines without Group.
TEST(NcclTestsOutput, OlderFormatWithoutRoot) {
  const std::string text = R"(# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
#   Rank  0 Pid  12345 on      dgx01 device  0 [0x07] A100-SXM4-40GB
#   Rank  1 Pid  12345 on      dgx01 device  1 [0x0f] A100-SXM4-40GB
#
#                                                       out-of-place                       in-place
#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum    12.25    0.00    0.00  0e+00    12.00    0.00    0.00  0e+00
   134217728      33554432     float     sum    33552    4.00    4.00  5e-07    33531    4.00    4.00    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 1.23
)";
  const NcclTestsTable t = parse_nccl_tests(text, "older.txt");
  EXPECT_EQ(t.collective, "");  // nothing names the binary
  EXPECT_EQ(t.ranks, 2);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].line, 10u);
  EXPECT_EQ(t.rows[0].redop, "sum");
  EXPECT_EQ(t.rows[0].root, std::nullopt);
  EXPECT_EQ(t.rows[0].time_us_oop, 12.25);
  EXPECT_EQ(t.rows[1].size_bytes, 134217728u);
  EXPECT_EQ(t.rows[1].count, 33554432u);
  EXPECT_EQ(t.rows[1].time_us_oop, 33552.0);
  EXPECT_EQ(t.rows[1].busbw_ip, 4.0);
}

// Before 2.13 each test printed its own columns: all_gather had no redop, broadcast a root instead of it.
TEST(NcclTestsOutput, OlderAllGatherAndBroadcastColumns) {
  const NcclTestsTable g = parse_nccl_tests(
      "$ ./build/all_gather_perf -b 1M -e 1M -g 2\n"
      "     1048576        131072     float    181.1    5.79    2.89  0e+00    179.1    5.85    2.93  0e+00\n",
      "gather.txt");
  EXPECT_EQ(g.collective, "all_gather");
  ASSERT_EQ(g.rows.size(), 1u);
  EXPECT_EQ(g.rows[0].redop, "");
  EXPECT_EQ(g.rows[0].root, std::nullopt);
  EXPECT_EQ(g.rows[0].busbw_oop, 2.89);
  EXPECT_EQ(g.rows[0].busbw_ip, 2.93);
  const NcclTestsTable b = parse_nccl_tests(
      "# Collective test starting: broadcast_perf\n"
      "     1048576        262144     float       0    50.10   20.93   20.93  0e+00    49.80   21.06   21.06  0e+00\n",
      "bcast.txt");
  EXPECT_EQ(b.collective, "broadcast");
  ASSERT_EQ(b.rows.size(), 1u);
  EXPECT_EQ(b.rows[0].redop, "");
  EXPECT_EQ(b.rows[0].root, 0);
  EXPECT_EQ(b.rows[0].algbw_ip, 21.06);
}

// srun --label: every line "N: "; NCCL's INFO lines mixed in; every process prints the device list.
TEST(NcclTestsOutput, SrunPrefixAndNcclInfoLines) {
  const std::string text = R"(0: # nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
0: #
0: # Using devices
0: #  Rank  0 Group  0 Pid   1001 on    p5-st-1 device  0 [0x53] NVIDIA H100 80GB HBM3
0: #  Rank  1 Group  0 Pid   1002 on    p5-st-1 device  1 [0x64] NVIDIA H100 80GB HBM3
1: #  Rank  0 Group  0 Pid   1001 on    p5-st-1 device  0 [0x53] NVIDIA H100 80GB HBM3
1: #  Rank  1 Group  0 Pid   1002 on    p5-st-1 device  1 [0x64] NVIDIA H100 80GB HBM3
0: p5-st-1:1001:1001 [0] NCCL INFO Bootstrap : Using enp71s0:10.1.1.1<0>
0: p5-st-1:1001:1001 [0] NCCL INFO NET/OFI Selected Provider is efa (found 32 nics)
0: p5-st-1:1001:1019 [0] NCCL INFO Channel 00/32 :    0   1
0: p5-st-1:1001:1019 [0] NCCL INFO comm 0x55d0c4d4e0e0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 53000 commId 0x9e0ba3b3 - Init COMPLETE
0: #
0: #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
0:            8             2     float     sum      -1    69.12    0.00    0.00      0    72.43    0.00    0.00      0
0: p5-st-1:1001:1001 [0] NCCL INFO Using network AWS Libfabric
0:           16             4     float     sum      -1    72.64    0.00    0.00      0    73.91    0.00    0.00      0
0: # Avg bus bandwidth    : 0
)";
  const NcclTestsTable t = parse_nccl_tests(text, "srun.log");
  EXPECT_EQ(t.ranks, 2);  // ranks 0 and 1, each printed twice
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].line, 14u);
  EXPECT_EQ(t.rows[0].time_us_oop, 69.12);
  EXPECT_EQ(t.rows[1].line, 16u);
  EXPECT_EQ(t.rows[1].size_bytes, 16u);
  EXPECT_EQ(t.rows[1].time_us_ip, 73.91);
}

// mpirun --tag-output "[job,rank]<stdout>:", and -prepend-rank "[0] ".
TEST(NcclTestsOutput, MpiPrefixes) {
  const NcclTestsTable t = parse_nccl_tests(
      "[1,0]<stdout>:# Collective test starting: alltoall_perf\n"
      "[1,0]<stdout>:           8             2     float    none      -1    20.01    0.00    0.00      0    19.87    0.00    0.00    N/A\n"
      "[0]         16             4     float    none      -1    20.11    0.00    0.00      0    20.02    0.00    0.00      0\n",
      "mpi.log");
  EXPECT_EQ(t.collective, "alltoall");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].redop, "none");
  EXPECT_EQ(t.rows[0].time_us_ip, 19.87);
  EXPECT_EQ(t.rows[1].time_us_oop, 20.11);
}

// Without device lines: NCCL's "nranks N" first, else nThread x nGpus of the one process.
TEST(NcclTestsOutput, RanksFromHints) {
  constexpr const char* kRow = "8 2 float sum -1 69.12 0.00 0.00 0 72.43 0.00 0.00 0\n";
  EXPECT_EQ(parse_nccl_tests(std::string("# nThread 2 nGpus 4 minBytes 8\n") + kRow, "a").ranks, 8);
  EXPECT_EQ(parse_nccl_tests(std::string("# nThread 1 nGpus 1 minBytes 8\n"
                                         "h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 16 cudaDev 0 - Init COMPLETE\n") +
                                 kRow,
                             "b")
                .ranks,
            16);
  EXPECT_EQ(parse_nccl_tests(kRow, "c").ranks, 0);
}

// Only the out-of-place half printed: the in-place values are absent, not zero.
TEST(NcclTestsOutput, OutOfPlaceOnly) {
  const NcclTestsTable t = parse_nccl_tests(
      "# Collective test starting: all_gather_perf\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
      "     8388608        131072     float    none      -1    166.6   50.34   47.19      0\n"
      "    16777216        262144     float    none      -1    204.6   82.01   76.89    N/A\n"
      "    33554432        524288     float   none    284.0  118.17  110.78  0e+00\n",
      "oop.txt");
  EXPECT_EQ(t.collective, "all_gather");
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0].root, -1);
  EXPECT_EQ(t.rows[0].time_us_oop, 166.6);
  EXPECT_EQ(t.rows[0].algbw_oop, 50.34);
  EXPECT_EQ(t.rows[0].busbw_oop, 47.19);
  EXPECT_EQ(t.rows[0].time_us_ip, std::nullopt);
  EXPECT_EQ(t.rows[0].algbw_ip, std::nullopt);
  EXPECT_EQ(t.rows[0].busbw_ip, std::nullopt);
  EXPECT_EQ(t.rows[1].busbw_oop, 76.89);
  EXPECT_EQ(t.rows[2].root, std::nullopt);  // the layout before 2.13
  EXPECT_EQ(t.rows[2].busbw_oop, 110.78);
}

TEST(NcclTestsOutput, CrLfAndWideNumbers) {
  // nccl-tests prints a value too wide for its column in e notation.
  const NcclTestsTable t = parse_nccl_tests(
      "# Collective test starting: reduce_scatter_perf\r\n"
      "  17179869184    4294967296     float     sum      -1  1.2e+05  143.16  134.21      0  1.2e+05  143.20  134.25      0\r\n",
      "crlf.txt");
  EXPECT_EQ(t.collective, "reduce_scatter");
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].size_bytes, 17179869184u);
  EXPECT_EQ(t.rows[0].time_us_oop, 120000.0);
  EXPECT_EQ(t.rows[0].busbw_ip, 134.25);
}

TEST(NcclTestsTsv, SyntheticTable) {
  const NcclTestsTable t = parse_nccl_tests(
      "# source_url: https://example.org/run\n"
      "# collective: reduce (sum, float)\n"
      "# command: ./build/all_reduce_perf -b 8 -e 16\n"
      "size_bytes\tcount\ttype\tredop\ttime_us_oop\talgbw_oop\tbusbw_oop\ttime_us_ip\talgbw_ip\tbusbw_ip\n"
      "8\t2\tfloat\tsum\t12.25\t0.00\t0.00\t12.00\t0.00\t0.00\n"
      "\n"
      "16\t\tfloat\tsum\t\t\t\t\t\t0.01\n",
      "t.tsv");
  EXPECT_EQ(t.format, NcclTestsFormat::kCalibrationTsv);
  EXPECT_EQ(t.collective, "reduce");  // from "# collective:", not from the command line
  EXPECT_EQ(t.ranks, 0);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].line, 5u);
  EXPECT_EQ(t.rows[0].count, 2u);
  EXPECT_EQ(t.rows[0].time_us_oop, 12.25);
  EXPECT_EQ(t.rows[0].time_us_ip, 12.0);
  EXPECT_EQ(t.rows[1].line, 7u);
  EXPECT_EQ(t.rows[1].size_bytes, 16u);
  EXPECT_EQ(t.rows[1].count, std::nullopt);
  EXPECT_EQ(t.rows[1].time_us_oop, std::nullopt);
  EXPECT_EQ(t.rows[1].busbw_ip, 0.01);
}

}  // namespace
}  // namespace fabemu::nccl
