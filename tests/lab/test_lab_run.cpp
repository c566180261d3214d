// A lab run end to end: three `fabemu agent` processes on loopback and `fabemu run --agents` coordinating.
// The shared 8- and 16-rank microbenchmarks give the single-host packet model's report and timeline; an agent
// killed mid-run makes the coordinator name its ranks and exit 1 within 10 s with a partial report; a
// coordinator killed mid-run makes the agents stop, clean up and serve the next coordinator.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "emulator/report_json.h"
#include "tests/lab/process_support.h"
#include "tests/support/test_support.h"


namespace fabemu::lab {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using proc::read_line;
using proc::wait_exit;
using Clock = std::chrono::steady_clock;

using proc::Child;
using proc::spawn;

bool alive(pid_t pid) { return ::kill(pid, 0) == 0 && wait_exit(pid, 0ms) == -1; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Waits until `file` contains `text`.
bool wait_for_text(const std::string& file, const std::string& text, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (slurp(file).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// GET /metrics from 127.0.0.1:port; the whole answer ("" when it cannot connect).
std::string http_get_metrics(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    if (::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 5000) <= 0) break;
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n <= 0) break;
        answer.append(buffer, static_cast<size_t>(n));
      }
    }
  }
  ::close(fd);
  return answer;
}

// The port of the first "metrics on [http://]127.0.0.1:PORT" in a log, or -1.
int metrics_port(const std::string& log) {
  std::smatch m;
  const std::string text = slurp(log);
  if (!std::regex_search(text, m, std::regex(R"(metrics on (?:http://)?127\.0\.0\.1:(\d+))"))) return -1;
  return std::stoi(m[1].str());
}

bool empty_dir(const fs::path& dir) { return fs::is_directory(dir) && fs::is_empty(dir); }

// An agent removes a run's folder when its run thread has been joined, a moment after it logs the end.
bool becomes_empty(const fs::path& dir, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const auto deadline = Clock::now() + timeout;
  while (!empty_dir(dir) && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return empty_dir(dir);
}

class LabRun : public ::testing::Test {
 protected:
  void SetUp() override {
    traces_ = test::shared_traces_dir();
    if (!traces_) GTEST_SKIP() << "../shared/traces is absent: lab run test skipped";
    configs_ = traces_->parent_path() / "configs" / "astra-sim";
    token_ = scratch_.file("lab.token");
    std::ofstream(token_) << "lab-run-test-token\n";
    ::chmod(token_.c_str(), 0600);
    for (int i = 0; i < 3; ++i) start_agent(i);
  }
  void TearDown() override {
    for (auto& a : agents_) {
      if (a.pid > 0) {
        ::kill(a.pid, SIGKILL);
        wait_exit(a.pid, 5s);
      }
      if (a.stdout_fd >= 0) ::close(a.stdout_fd);
    }
    if (coordinator_ > 0) {
      ::kill(coordinator_, SIGKILL);
      wait_exit(coordinator_, 5s);
    }
  }

  // Starts agent i (again, after a kill); agent 0 serves metrics too.
  void start_agent(int i) {
    const fs::path work = scratch_.path() / fmt_name("work", i);
    fs::create_directories(work);
    std::vector<std::string> args = {FABEMU_CLI_PATH, "agent", "--listen", "127.0.0.1:0", "--token-file", token_,
                                     "--work-dir", work.string(), "--heartbeat-ms", "200", "--idle-timeout-ms", "3000"};
    if (i == 0) args.insert(args.end(), {"--metrics", "127.0.0.1:0"});
    Child c = spawn(args, "", scratch_.file(fmt_name("agent", i) + ".log"));
    const std::string line = read_line(c.stdout_fd, 10s);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, std::regex(R"(listening on 127\.0\.0\.1:(\d+))"))) << line;
    if (static_cast<size_t>(i) < agents_.size()) {
      if (agents_[i].stdout_fd >= 0) ::close(agents_[i].stdout_fd);
      agents_[i] = c;
      ports_[i] = std::stoi(m[1].str());
    } else {
      work_.push_back(work);
      ports_.push_back(std::stoi(m[1].str()));
      agents_.push_back(c);
    }
  }
  static std::string fmt_name(const char* what, int i) { return std::string(what) + std::to_string(i); }

  // lab.yaml over the three agents: `split` gives the first rank of agents b and c.
  // `extra`: more top-level keys ("dscp: 34\n").
  std::string write_lab(int first_b, int first_c, int ranks, const std::string& fabric = "model",
                        const std::string& extra = "") {
    const std::string path = scratch_.file("lab.yaml");
    std::ofstream out(path);
    out << "token_file: lab.token\nfabric: " << fabric << "\n" << extra << "shared_storage: false\nagents:\n";
    const int firsts[4] = {0, first_b, first_c, ranks};
    const char* names[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; ++i) {
      out << "  - name: " << names[i] << "\n    control: 127.0.0.1:" << ports_[i] << "\n    data: 127.0.0.1:"
          << 47100 + 100 * i << "\n    ranks: " << firsts[i] << "-" << firsts[i + 1] - 1 << "\n";
    }
    return path;
  }

  fs::path prefix(const std::string& coll, int n) const {
    return *traces_ / "astra-sim/examples/workload/microbenchmarks" / coll / (std::to_string(n) + "npus_1MB") / coll;
  }
  std::vector<std::string> workload_args(const std::string& coll, int n) const {
    return {"-w", prefix(coll, n).string(), "-n", (configs_ / ("Ring_" + std::to_string(n) + "npus.yml")).string(),
            "-s", (configs_ / "system_ring_4chunks.json").string()};
  }

  // Starts a coordinator on a paced 8-rank all-reduce (dilation 1e6: it would last minutes) over `lab` with
  // `extra` options, and returns once every agent's walk is under way (past the start margin); its pid, or
  // -1 when an agent did not get the start within 15 s.
  pid_t start_long_run(const std::string& lab, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {FABEMU_CLI_PATH, "run", "--agents", lab, "--dilation", "1000000"};
    args.insert(args.end(), extra.begin(), extra.end());
    for (const auto& w : workload_args("all_reduce", 8)) args.push_back(w);
    const Child c = spawn(args, scratch_.file("coord.out"), scratch_.file("coord.err"));
    coordinator_ = c.pid;
    for (int i = 0; i < 3; ++i) {
      if (!wait_for_text(scratch_.file(fmt_name("agent", i) + ".log"), "starts in", 15s)) return -1;
    }
    std::this_thread::sleep_for(1s);
    return c.pid;
  }

  // Runs fabemu to the end (at most `timeout`); its exit status.
  int run_fabemu(std::vector<std::string> args, const std::string& name, std::chrono::milliseconds timeout = 60s) {
    args.insert(args.begin(), FABEMU_CLI_PATH);
    const Child c = spawn(args, scratch_.file(name + ".out"), scratch_.file(name + ".err"));
    coordinator_ = c.pid;
    const int status = wait_exit(c.pid, timeout);
    if (status != -1) coordinator_ = -1;
    return status;
  }

  std::optional<fs::path> traces_;
  fs::path configs_;
  test::ScratchDir scratch_;
  std::string token_;
  std::vector<Child> agents_;
  std::vector<int> ports_;
  std::vector<fs::path> work_;
  pid_t coordinator_ = -1;
};

// A timeline's text without its counter tracks ("C" events and the network process's metadata), which a
// lab run's timeline does not have (docs/report.md): the rest must be byte for byte the single-host run's.
std::string without_counters(const std::string& timeline) {
  std::string out;
  size_t counters = 0;
  for (size_t at = 0; at < timeline.size();) {
    size_t end = timeline.find('\n', at);
    if (end == std::string::npos) end = timeline.size();
    const std::string line = timeline.substr(at, end - at);
    const bool counter = line.find("\"ph\":\"C\"") != std::string::npos ||
                         line.find("\"pid\":1000000000,") != std::string::npos;
    if (counter) {
      ++counters;
    } else {
      out += line;
      out += '\n';
    }
    at = end + 1;
  }
  // Commas: the last event kept may have lost its successor; compare events, not separators.
  std::erase(out, ',');
  return out + std::to_string(counters > 0);
}

std::string LabRunRange(int lo, int hi) { return std::to_string(lo) + "-" + std::to_string(hi); }

void expect_same_report(const emu::RunResult& single, const emu::RunResult& lab, int n) {
  ASSERT_EQ(lab.ranks.size(), static_cast<size_t>(n));
  ASSERT_EQ(single.ranks.size(), static_cast<size_t>(n));
  EXPECT_EQ(lab.total, single.total);
  EXPECT_GT(lab.total.ps(), 0u);
  EXPECT_EQ(lab.status, single.status);
  EXPECT_EQ(lab.reached, single.reached);  // the merged report's time_reached_ps was 0
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(lab.ranks[r].rank, r);
    EXPECT_EQ(lab.ranks[r].finish, single.ranks[r].finish) << "rank " << r;
    EXPECT_EQ(lab.ranks[r].comm_busy, single.ranks[r].comm_busy) << "rank " << r;
    EXPECT_EQ(lab.ranks[r].nodes, single.ranks[r].nodes) << "rank " << r;
    EXPECT_EQ(lab.ranks[r].sent_messages, single.ranks[r].sent_messages) << "rank " << r;
    EXPECT_EQ(lab.ranks[r].sent_bytes, single.ranks[r].sent_bytes) << "rank " << r;
    EXPECT_EQ(lab.ranks[r].received_messages, single.ranks[r].received_messages) << "rank " << r;
    EXPECT_EQ(lab.ranks[r].received_bytes, single.ranks[r].received_bytes) << "rank " << r;
    EXPECT_GT(lab.ranks[r].sent_messages, 0u) << "rank " << r;
  }
  ASSERT_EQ(lab.collectives.size(), single.collectives.size());
  ASSERT_FALSE(lab.collectives.empty());
  for (size_t i = 0; i < lab.collectives.size(); ++i) {
    EXPECT_EQ(lab.collectives[i].type, single.collectives[i].type);
    EXPECT_EQ(lab.collectives[i].issued_first, single.collectives[i].issued_first);
    EXPECT_EQ(lab.collectives[i].issued_last, single.collectives[i].issued_last);
    EXPECT_EQ(lab.collectives[i].finished, single.collectives[i].finished);
    EXPECT_EQ(lab.collectives[i].messages, single.collectives[i].messages);
    EXPECT_EQ(lab.collectives[i].message_bytes, single.collectives[i].message_bytes);
  }
  ASSERT_EQ(lab.links.size(), single.links.size());
  for (size_t i = 0; i < lab.links.size(); ++i) {
    EXPECT_EQ(lab.links[i].bytes, single.links[i].bytes);
    EXPECT_EQ(lab.links[i].busy, single.links[i].busy);
  }
  EXPECT_EQ(lab.messages, single.messages);
  EXPECT_EQ(lab.message_bytes, single.message_bytes);
  EXPECT_TRUE(lab.stuck.empty());
}

TEST_F(LabRun, SharedMicrobenchmarksMatchTheSingleHostRun) {
  int runs = 0;
  for (const std::string fabric : {"model", "socket"}) {
  for (const int n : {8, 16}) {
    for (const std::string coll : {"all_reduce", "all_to_all"}) {
      SCOPED_TRACE(fabric + " " + coll + " " + std::to_string(n));
      const int b = n == 8 ? 3 : 6, c = n == 8 ? 6 : 11;
      // Over sockets, lab.yaml's traffic class: every datagram an agent received carries it.
      const std::string lab = write_lab(b, c, n, fabric, fabric == "socket" ? "dscp: 34\necn: ect0\n" : "");
      auto single_args = workload_args(coll, n);
      auto lab_args = single_args;
      single_args.insert(single_args.begin(), {"run", "-m", "packet", "-q", "-r", scratch_.file("single.json"), "-t",
                                               scratch_.file("single.timeline.json")});
      lab_args.insert(lab_args.begin(), {"run", "--agents", lab, "--as-fast-as-possible", "-r",
                                         scratch_.file("lab.json"), "-t", scratch_.file("lab.timeline.json")});
      ASSERT_EQ(run_fabemu(single_args, "single"), 0) << slurp(scratch_.file("single.err"));
      ASSERT_EQ(run_fabemu(lab_args, "lab"), 0) << slurp(scratch_.file("lab.err"));
      const emu::RunResult single = emu::read_report_file(scratch_.file("single.json"));
      const emu::RunResult merged = emu::read_report_file(scratch_.file("lab.json"));
      expect_same_report(single, merged, n);
      // The timeline: every rank's slices, in the single-host order: the same bytes, but for the counter
      // tracks, which only the single-host run writes.
      const std::string single_timeline = without_counters(slurp(scratch_.file("single.timeline.json")));
      const std::string lab_timeline = without_counters(slurp(scratch_.file("lab.timeline.json")));
      EXPECT_EQ(single_timeline.back(), '1');  // it had counters
      EXPECT_EQ(lab_timeline.substr(0, lab_timeline.size() - 1), single_timeline.substr(0, single_timeline.size() - 1));
      // The lab section: three agents done, their ranks, the clock and the control plane's figures.
      const auto doc = nlohmann::json::parse(slurp(scratch_.file("lab.json")));
      const auto& section = doc.at("lab");
      ASSERT_EQ(section.at("agents").size(), 3u);
      EXPECT_EQ(section.at("agents")[1].at("ranks"), LabRunRange(b, c - 1));
      for (const auto& a : section.at("agents")) {
        EXPECT_EQ(a.at("status"), "done");
        // One host, one clock: the true offset is 0, so the estimate is within its bound rtt/2 (NTP's
        // guarantee when the four timestamps are ordered), to the rounding of the two halvings.
        const int64_t bound = a.at("clock_residual_bound_ns").get<int64_t>();
        EXPECT_GT(a.at("clock_rtt_ns").get<int64_t>(), 0);
        EXPECT_EQ(bound, a.at("clock_rtt_ns").get<int64_t>() / 2);
        EXPECT_LE(std::abs(a.at("clock_offset_ns").get<int64_t>()), bound + 1);
        // The walk began at the agreed instant (Start.at in the agent's clock): never before it, and within
        // the start margin after it (scheduling latency on a loaded host).
        const int64_t skew = a.at("start_skew_ns").get<int64_t>();
        EXPECT_GE(skew, 0);
        EXPECT_LT(skew, 500'000'000);
      }
      EXPECT_EQ(section.at("lost_ranks"), "");
      if (fabric == "socket") {
        // Each agent put on the wire only what its ranks send: together, every message once.
        uint64_t sent = 0;
        for (const auto& a : section.at("agents")) sent += a.at("socket").at("messages_sent").get<uint64_t>();
        EXPECT_EQ(sent, merged.messages);
        EXPECT_EQ(section.at("dscp"), 34);
        EXPECT_EQ(section.at("ecn"), "ect0");
        EXPECT_TRUE(section.at("wire").is_null());
        for (const auto& a : section.at("agents")) {
          const auto& so = a.at("socket");
          EXPECT_EQ(so.at("transport"), "UDP DSCP 34 ECN ect0");
          EXPECT_GT(so.at("datagrams_rx").get<uint64_t>(), 0u);
          EXPECT_EQ(so.at("frames_by_ecn").at("ect0"), so.at("datagrams_rx"));
          EXPECT_EQ(so.at("frames_dscp_changed"), 0);
        }
        const std::string text = slurp(scratch_.file("lab.out"));
        EXPECT_NE(text.find("fabric socket, DSCP 34 ECN ect0, run "), std::string::npos) << text;
        EXPECT_NE(text.find(", CE on 0 of "), std::string::npos) << text;
      } else {
        EXPECT_TRUE(section.at("dscp").is_null());
      }
      std::printf("lab %s %s %d ranks: setup %.3f ms (Start sent), residual bounds %lld/%lld/%lld ns, start skews "
                  "%lld/%lld/%lld ns\n",
                  fabric.c_str(), coll.c_str(), n, section.at("setup_ns").get<double>() / 1e6,
                  static_cast<long long>(section.at("agents")[0].at("clock_residual_bound_ns").get<int64_t>()),
                  static_cast<long long>(section.at("agents")[1].at("clock_residual_bound_ns").get<int64_t>()),
                  static_cast<long long>(section.at("agents")[2].at("clock_residual_bound_ns").get<int64_t>()),
                  static_cast<long long>(section.at("agents")[0].at("start_skew_ns").get<int64_t>()),
                  static_cast<long long>(section.at("agents")[1].at("start_skew_ns").get<int64_t>()),
                  static_cast<long long>(section.at("agents")[2].at("start_skew_ns").get<int64_t>()));
      ++runs;
    }
  }
  }
  EXPECT_EQ(runs, 8);
  // Every run's folder is gone from every agent.
  for (const auto& w : work_) EXPECT_TRUE(becomes_empty(w)) << w;
}

// Issue 51: a system file with a custom implementation (a path relative to its folder, as the shared one has):
// the coordinator ships the implementation's files with it, and the lab run equals the single-host run.
TEST_F(LabRun, CustomImplementationsTravelWithTheSystemFile) {
  const std::string lab = write_lab(3, 6, 8, "model");
  auto single_args = workload_args("all_reduce", 8);
  single_args.back() = (configs_ / "system_custom_allreduce.json").string();
  auto lab_args = single_args;
  single_args.insert(single_args.begin(), {"run", "-m", "packet", "-q", "-r", scratch_.file("single.json")});
  lab_args.insert(lab_args.begin(), {"run", "--agents", lab, "--as-fast-as-possible", "-r", scratch_.file("lab.json")});
  ASSERT_EQ(run_fabemu(single_args, "single"), 0) << slurp(scratch_.file("single.err"));
  ASSERT_EQ(run_fabemu(lab_args, "lab"), 0) << slurp(scratch_.file("lab.err"));
  const emu::RunResult single = emu::read_report_file(scratch_.file("single.json"));
  const emu::RunResult merged = emu::read_report_file(scratch_.file("lab.json"));
  ASSERT_EQ(single.collectives.size(), 1u);
  EXPECT_EQ(single.collectives[0].algorithm, "custom");
  EXPECT_EQ(single.total.ps(), 90'179'698u);  // ASTRA-sim: 90,174 ns (REFERENCE.md)
  expect_same_report(single, merged, 8);
  for (const auto& w : work_) EXPECT_TRUE(becomes_empty(w)) << w;
}

TEST_F(LabRun, AKilledAgentStopsTheRunWithAPartialReport) {
  // Paced so that the run would last about 20 s: the kill comes well inside it.
  auto single_args = workload_args("all_reduce", 8);
  single_args.insert(single_args.begin(), {"run", "-m", "packet", "-q", "-r", scratch_.file("single.json")});
  ASSERT_EQ(run_fabemu(single_args, "single"), 0);
  const emu::RunResult single = emu::read_report_file(scratch_.file("single.json"));
  const double dilation = std::min(1e6, 20e12 / static_cast<double>(single.total.ps()));

  for (const std::string fabric : {"model", "socket"}) {
    SCOPED_TRACE(fabric);
    const std::string lab = write_lab(3, 6, 8, fabric);
    std::vector<std::string> args = {FABEMU_CLI_PATH, "run", "--agents", lab, "--dilation", std::to_string(dilation),
                                     "-r", scratch_.file("partial.json")};
    for (const auto& w : workload_args("all_reduce", 8)) args.push_back(w);
    const Child c = spawn(args, scratch_.file("coord.out"), scratch_.file("coord.err"));
    coordinator_ = c.pid;
    ASSERT_TRUE(wait_for_text(scratch_.file("agent1.log"), "starts in", 15s)) << slurp(scratch_.file("coord.err"));
    std::this_thread::sleep_for(1500ms);  // past the start margin: the walk is under way
    ASSERT_EQ(::kill(agents_[1].pid, SIGKILL), 0);
    const auto killed = Clock::now();
    const int status = wait_exit(c.pid, 10s);
    const auto took = Clock::now() - killed;
    coordinator_ = status == -1 ? c.pid : -1;
    ASSERT_EQ(status, 1) << "the coordinator did not exit 1 within 10 s of the kill: " << slurp(scratch_.file("coord.err"));
    wait_exit(agents_[1].pid, 5s);
    std::printf("%s: the coordinator exited %.3f s after the kill\n", fabric.c_str(),
                std::chrono::duration<double>(took).count());
    const std::string err = slurp(scratch_.file("coord.err"));
    EXPECT_NE(err.find("rank(s) 3-5 lost"), std::string::npos) << err;
    EXPECT_NE(err.find("agent b"), std::string::npos) << err;

    const emu::RunResult partial = emu::read_report_file(scratch_.file("partial.json"));
    ASSERT_EQ(partial.ranks.size(), 5u);
    EXPECT_EQ(partial.ranks[2].rank, 2);
    EXPECT_EQ(partial.ranks[3].rank, 6);
    bool named = false;
    for (const auto& w : partial.warnings) named = named || w.find("ranks 3-5 have no result") != std::string::npos;
    EXPECT_TRUE(named);
    const auto doc = nlohmann::json::parse(slurp(scratch_.file("partial.json")));
    EXPECT_EQ(doc.at("lab").at("lost_ranks"), "3-5");
    EXPECT_EQ(doc.at("lab").at("agents")[1].at("status"), "lost");
    EXPECT_EQ(doc.at("lab").at("agents")[0].at("status"), "interrupted");
    EXPECT_EQ(doc.at("lab").at("agents")[2].at("status"), "interrupted");
    // The survivors stopped their runs, removed their folders and still serve.
    for (const int i : {0, 2}) {
      EXPECT_TRUE(alive(agents_[i].pid));
      EXPECT_TRUE(becomes_empty(work_[i])) << work_[i];
    }
    start_agent(1);
  }
}

TEST_F(LabRun, SigintOnTheCoordinatorStopsTheRunWithAPartialReport) {
  const pid_t pid = start_long_run(write_lab(3, 6, 8), {"-r", scratch_.file("interrupted.json")});
  ASSERT_NE(pid, -1) << "an agent did not start";
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  const int status = wait_exit(pid, 10s);
  coordinator_ = status == -1 ? pid : -1;
  ASSERT_EQ(status, 1) << "the coordinator did not exit 1 within 10 s of SIGINT: " << slurp(scratch_.file("coord.err"));
  const std::string err = slurp(scratch_.file("coord.err"));
  EXPECT_NE(err.find("interrupted (SIGINT/SIGTERM)"), std::string::npos) << err;
  // Every agent was stopped and sent what it had: all 8 ranks are in the partial report.
  const emu::RunResult partial = emu::read_report_file(scratch_.file("interrupted.json"));
  EXPECT_EQ(partial.ranks.size(), 8u);
  bool said = false;
  for (const auto& w : partial.warnings) said = said || w.find("lab run interrupted") != std::string::npos;
  EXPECT_TRUE(said);
  const auto doc = nlohmann::json::parse(slurp(scratch_.file("interrupted.json")));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(doc.at("lab").at("agents")[i].at("status"), "interrupted") << i;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(alive(agents_[i].pid));
    EXPECT_TRUE(becomes_empty(work_[i])) << work_[i];
  }
}

// A peer that stops answering on the wire, though its control connection lives: agent b frozen (SIGSTOP) for
// 1.5 s mid-run, well under the coordinator's 5 s loss timeout but over --socket-stall-timeout 300. Agents a
// and c stop their walks on the stall and report it; the coordinator writes the partial report (every rank)
// and exits 2, naming each stalled agent.
TEST_F(LabRun, AFrozenPeerStallsTheOthersWhoReportIt) {
  const pid_t pid = start_long_run(write_lab(3, 6, 8, "socket"),
                                   {"--socket-stall-timeout", "300", "-r", scratch_.file("stalled.json")});
  ASSERT_NE(pid, -1) << "an agent did not start";
  ASSERT_EQ(::kill(agents_[1].pid, SIGSTOP), 0);
  std::this_thread::sleep_for(1500ms);
  ASSERT_EQ(::kill(agents_[1].pid, SIGCONT), 0);
  const int status = wait_exit(pid, 15s);
  coordinator_ = status == -1 ? pid : -1;
  const std::string err = slurp(scratch_.file("coord.err"));
  ASSERT_EQ(status, 2) << err;
  EXPECT_NE(err.find("fabemu: error: lab run: the wire stalled on "), std::string::npos) << err;
  EXPECT_NE(err.find("  agent a (127.0.0.1:"), std::string::npos) << err;
  EXPECT_NE(err.find("  agent c (127.0.0.1:"), std::string::npos) << err;
  const emu::RunResult partial = emu::read_report_file(scratch_.file("stalled.json"));
  EXPECT_EQ(partial.ranks.size(), 8u);
  EXPECT_TRUE(partial.stuck.empty());
  bool said = false;
  for (const auto& w : partial.warnings) said = said || w.rfind("lab: agent a's wire stalled: message ", 0) == 0;
  EXPECT_TRUE(said) << slurp(scratch_.file("stalled.json"));
  // Each agent names its own ranks that did not finish: ranks 0-2 and 6-7 here (3-5 too if b stalled in turn).
  std::set<unsigned> unfinished;
  for (const auto& w : partial.warnings) {
    unsigned rank = 0;
    if (std::sscanf(w.c_str(), "stopped: rank %u (", &rank) == 1) {
      EXPECT_TRUE(unfinished.insert(rank).second) << w;
    }
  }
  for (const unsigned r : {0u, 1u, 2u, 6u, 7u}) EXPECT_TRUE(unfinished.contains(r)) << r;
  // The stall says why messages went unacknowledged: no second warning about it.
  for (const auto& w : partial.warnings) EXPECT_EQ(w.find("not acknowledged at the end"), std::string::npos) << w;
  const auto doc = nlohmann::json::parse(slurp(scratch_.file("stalled.json")));
  std::printf("agent statuses %s %s %s; stderr:\n%s", doc.at("lab").at("agents")[0].at("status").dump().c_str(),
              doc.at("lab").at("agents")[1].at("status").dump().c_str(),
              doc.at("lab").at("agents")[2].at("status").dump().c_str(), err.c_str());
  for (const int i : {0, 2}) {
    const auto& agent = doc.at("lab").at("agents")[i];
    EXPECT_EQ(agent.at("status"), "stalled") << i;
    const std::string why = agent.at("stall").get<std::string>();
    EXPECT_NE(why.find("but for 300 ms nothing arrived for it"), std::string::npos) << why;
    EXPECT_EQ(agent.at("socket").at("stall"), agent.at("stall")) << i;
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(alive(agents_[i].pid));
    EXPECT_TRUE(becomes_empty(work_[i])) << work_[i];
  }
}

TEST_F(LabRun, AgentsStopAndCleanUpWhenTheCoordinatorDies) {
  const std::string lab = write_lab(3, 6, 8);
  const pid_t pid = start_long_run(lab, {});
  ASSERT_NE(pid, -1) << "an agent did not start";
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(empty_dir(work_[i])) << "the run's folder exists while it runs";
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  EXPECT_NE(wait_exit(pid, 5s), -1);
  coordinator_ = -1;
  // Within the agents' idle timeout (3 s; the closed connection is usually seen at once): runs stopped,
  // folders removed, agents alive.
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(wait_for_text(scratch_.file(fmt_name("agent", i) + ".log"), "results dropped", 6s)) << i;
    EXPECT_TRUE(becomes_empty(work_[i])) << work_[i];
    EXPECT_TRUE(alive(agents_[i].pid));
  }
  // And they serve the next coordinator.
  std::vector<std::string> again = {"run", "--agents", lab, "--as-fast-as-possible", "-q", "-r", scratch_.file("again.json")};
  for (const auto& w : workload_args("all_reduce", 8)) again.push_back(w);
  ASSERT_EQ(run_fabemu(again, "again"), 0) << slurp(scratch_.file("again.err"));
  EXPECT_EQ(emu::read_report_file(scratch_.file("again.json")).ranks.size(), 8u);
}

TEST_F(LabRun, MetricsEndpointsServeDuringTheRun) {
  const std::string lab = write_lab(3, 6, 8, "model");
  std::vector<std::string> args = {FABEMU_CLI_PATH, "run", "--agents", lab, "--dilation", "1000000", "--metrics",
                                   "127.0.0.1:0"};
  for (const auto& w : workload_args("all_reduce", 8)) args.push_back(w);
  const Child c = spawn(args, scratch_.file("coord.out"), scratch_.file("coord.err"));
  coordinator_ = c.pid;
  ASSERT_TRUE(wait_for_text(scratch_.file("agent0.log"), "starts in", 15s)) << slurp(scratch_.file("coord.err"));
  std::this_thread::sleep_for(1s);  // past the start margin
  const int coordinator_port = metrics_port(scratch_.file("coord.err"));
  const int agent_port = metrics_port(scratch_.file("agent0.log"));
  ASSERT_GT(coordinator_port, 0) << slurp(scratch_.file("coord.err"));
  ASSERT_GT(agent_port, 0) << slurp(scratch_.file("agent0.log"));
  const std::string coordinator = http_get_metrics(coordinator_port);
  EXPECT_NE(coordinator.find("200 OK"), std::string::npos) << coordinator;
  EXPECT_NE(coordinator.find("fabemu_lab_agents{role=\"coordinator\",state=\"running\"} 3"), std::string::npos)
      << coordinator;
  EXPECT_NE(coordinator.find("fabemu_running{role=\"coordinator\"} 1"), std::string::npos) << coordinator;
  const std::string agent = http_get_metrics(agent_port);
  EXPECT_NE(agent.find("fabemu_running{role=\"agent\","), std::string::npos) << agent;
  EXPECT_NE(agent.find("} 1\n"), std::string::npos) << agent;
  // Issue 44 item 19: the coordinator's traffic counters stayed 0 while the agents counted; two agents of
  // one host had the same labels; a family (links, over the model fabric) had HELP/TYPE and no sample.
  // The agents' heartbeats (every 200 ms here) carry their counters: the coordinator's sum is theirs.
  std::this_thread::sleep_for(500ms);
  const std::string summed = http_get_metrics(coordinator_port);
  const std::regex sent_re(R"(fabemu_messages_sent_total\{role="coordinator"\} (\d+))");
  std::smatch sent;
  ASSERT_TRUE(std::regex_search(summed, sent, sent_re)) << summed;
  EXPECT_GT(std::stoull(sent[1].str()), 0u) << summed;
  EXPECT_NE(agent.find(fmt::format("listen=\"127.0.0.1:{}\"", ports_[0])), std::string::npos) << agent;
  for (const std::string* text : {&summed, &agent}) {
    // Every TYPE line is followed by a sample of its family.
    for (size_t at = text->find("# TYPE "); at != std::string::npos; at = text->find("# TYPE ", at + 1)) {
      const size_t name_end = text->find(' ', at + 7);
      const std::string family = text->substr(at + 7, name_end - at - 7);
      const size_t next_line = text->find('\n', at) + 1;
      EXPECT_EQ(text->compare(next_line, family.size(), family), 0) << family << " has no sample:\n" << *text;
    }
  }
  ::kill(c.pid, SIGKILL);
  wait_exit(c.pid, 5s);
  coordinator_ = -1;
  // Between runs the agent's endpoint still answers, idle.
  EXPECT_TRUE(wait_for_text(scratch_.file("agent0.log"), "results dropped", 6s));
  const std::string idle = http_get_metrics(agent_port);
  EXPECT_NE(idle.find("fabemu_running{role=\"agent\","), std::string::npos) << idle;
}

// Issue 44 item 18: the summary said "done" for agents whose every delivery was late and that resent on
// timeout; it now prints each agent's socket section as a single-host socket run does, and how far apart the
// agents' walks began (`lab.start_spread_ns`).
TEST_F(LabRun, SummaryShowsEachAgentsWireAndTheStartSpread) {
  const std::string lab = write_lab(3, 6, 8, "socket");
  auto args = workload_args("all_reduce", 8);
  args.insert(args.begin(), {"run", "--agents", lab, "--dilation", "1000", "-r", scratch_.file("lab.json")});
  ASSERT_EQ(run_fabemu(args, "lab"), 0) << slurp(scratch_.file("lab.err"));
  const std::string text = slurp(scratch_.file("lab.out"));
  const auto section = nlohmann::json::parse(slurp(scratch_.file("lab.json"))).at("lab");
  int64_t earliest = INT64_MAX, latest = INT64_MIN;
  for (const auto& a : section.at("agents")) {
    const auto& so = a.at("socket");
    const std::string name = a.at("name");
    EXPECT_NE(text.find("  agent " + name + ": Socket fabric (UDP)\n"), std::string::npos) << text;
    const uint64_t late = so.at("late"), on_time = so.at("on_time");
    EXPECT_NE(text.find(fmt::format("    late deliveries     {} of {} (wire slower than the target)", late, late + on_time)),
              std::string::npos) << text;
    EXPECT_NE(text.find(fmt::format("{} retransmitted ({} on NACK, {} on timeout)", so.at("retransmissions").get<uint64_t>(),
                                    so.at("nack_retransmissions").get<uint64_t>(),
                                    so.at("timeout_retransmissions").get<uint64_t>())),
              std::string::npos) << text;
    earliest = std::min(earliest, a.at("start_skew_ns").get<int64_t>());
    latest = std::max(latest, a.at("start_skew_ns").get<int64_t>());
  }
  EXPECT_EQ(section.at("start_spread_ns").get<int64_t>(), latest - earliest);
  EXPECT_NE(text.find(fmt::format("  start               the agents' walks began {:.3f} ms apart ({:.3f} to {:.3f} ms "
                                  "after the agreed instant)\n", static_cast<double>(latest - earliest) / 1e6,
                                  static_cast<double>(earliest) / 1e6, static_cast<double>(latest) / 1e6)),
            std::string::npos) << text;
}

TEST_F(LabRun, SharedStorageShipsPathsCheckedBySha256) {
  std::string lab_text = slurp(write_lab(3, 6, 8, "model"));
  lab_text.replace(lab_text.find("shared_storage: false"), 21, "shared_storage: true");
  std::ofstream(scratch_.file("lab.yaml")) << lab_text;
  std::vector<std::string> args = {"run", "--agents", scratch_.file("lab.yaml"), "--as-fast-as-possible", "-q", "-r",
                                   scratch_.file("shared.json")};
  for (const auto& w : workload_args("all_gather", 8)) args.push_back(w);
  ASSERT_EQ(run_fabemu(args, "shared"), 0) << slurp(scratch_.file("shared.err"));
  EXPECT_EQ(emu::read_report_file(scratch_.file("shared.json")).ranks.size(), 8u);
  // The agents read the traces in place: nothing but the configuration went into their folders.
  EXPECT_NE(slurp(scratch_.file("agent0.log")).find("traces checked"), std::string::npos);
}

TEST_F(LabRun, ABadTraceStopsTheRunNamingTheFile) {
  // A copy of the 8-rank all_reduce with rank 5's trace cut short.
  const fs::path dir = scratch_.path() / "bad";
  fs::create_directories(dir);
  for (int r = 0; r < 8; ++r) {
    const std::string name = "all_reduce." + std::to_string(r) + ".et";
    fs::copy_file(prefix("all_reduce", 8).parent_path() / name, dir / name);
  }
  const fs::path cut = dir / "all_reduce.5.et";
  fs::resize_file(cut, fs::file_size(cut) - 7);
  const std::string lab = write_lab(3, 6, 8, "model");
  auto args = workload_args("all_reduce", 8);
  args[1] = (dir / "all_reduce").string();
  args.insert(args.begin(), {"run", "--agents", lab, "--as-fast-as-possible"});
  EXPECT_EQ(run_fabemu(args, "badtrace", 20s), 2);
  const std::string err = slurp(scratch_.file("badtrace.err"));
  EXPECT_NE(err.find("all_reduce.5.et"), std::string::npos) << err;
  // Issue 44 item 17: the user's file, not the agent's copy in its run folder.
  EXPECT_NE(err.find(cut.string()), std::string::npos) << err;
  EXPECT_EQ(err.find("fabemu-run-"), std::string::npos) << err;
  EXPECT_NE(err.find("ERROR_RUN_FAILED"), std::string::npos) << err;
  // The agents are fine and clean.
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(alive(agents_[i].pid));
    EXPECT_TRUE(becomes_empty(work_[i])) << work_[i];
  }
}

// `fabric: dpdk` on agents started without --dpdk-device: refused at AssignRanks, before any Start, the error
// naming the agent and the option; the agents stay up and their run folders go.
TEST_F(LabRun, DpdkFabricNeedsAgentsWithADpdkDevice) {
  const std::string lab = write_lab(3, 6, 8, "dpdk");
  std::vector<std::string> args = {"run", "--agents", lab};
  for (const auto& w : workload_args("all_reduce", 8)) args.push_back(w);
  EXPECT_EQ(run_fabemu(args, "dpdk"), 2);
  const std::string err = slurp(scratch_.file("dpdk.err"));
  std::smatch m;
  EXPECT_TRUE(std::regex_search(err, m, std::regex(R"(agent ([abc]) \(127\.0\.0\.1:\d+\): agent \1 \(.*\) has no DPDK )"
                                                   R"(port for lab fabric dpdk: start it with --dpdk-device DEVARGS)")))
      << err;
  EXPECT_NE(err.find("ERROR_RUN_FAILED"), std::string::npos) << err;
  EXPECT_EQ(err.find(" started: "), std::string::npos) << err;  // the coordinator never sent Start
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(alive(agents_[i].pid));
    EXPECT_TRUE(becomes_empty(work_[i])) << work_[i];
  }
}

// A data address already in use: the agent's preparation fails (its UDP sockets are bound then), so the
// coordinator exits 2 before any Start, naming the rank and the address; once it is free, the same lab runs.
TEST_F(LabRun, ABusyDataAddressFailsThePreparation) {
  const std::string lab = write_lab(3, 6, 8, "socket");
  std::vector<std::string> args = {"run", "--agents", lab, "--as-fast-as-possible", "-q"};
  for (const auto& w : workload_args("all_reduce", 8)) args.push_back(w);
  {
    // Agent b hosts ranks 3-5 at 127.0.0.1:47200 + i: rank 4's port taken.
    boost::asio::io_context io;
    boost::asio::ip::udp::socket busy(io, boost::asio::ip::udp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 47201));
    EXPECT_EQ(run_fabemu(args, "busy"), 2);
    const std::string err = slurp(scratch_.file("busy.err"));
    EXPECT_NE(err.find("agent b"), std::string::npos) << err;
    EXPECT_NE(err.find("cannot bind the data plane"), std::string::npos) << err;
    EXPECT_NE(err.find("rank 4 at 127.0.0.1:47201"), std::string::npos) << err;
    EXPECT_NE(err.find("ERROR_RUN_FAILED"), std::string::npos) << err;
    EXPECT_EQ(err.find(" started: "), std::string::npos) << err;  // the coordinator never sent Start
  }
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(becomes_empty(work_[i])) << work_[i];
  EXPECT_EQ(run_fabemu(args, "free"), 0) << slurp(scratch_.file("free.err"));
}

TEST_F(LabRun, BadLabFilesAndTokensAreClearErrors) {
  // Rank 7 hosted by nobody.
  const std::string lab = write_lab(3, 6, 7);
  std::vector<std::string> args = {"run", "--agents", lab};
  for (const auto& w : workload_args("all_reduce", 8)) args.push_back(w);
  EXPECT_EQ(run_fabemu(args, "missing"), 2);
  EXPECT_NE(slurp(scratch_.file("missing.err")).find("no agent hosts rank(s) 7"), std::string::npos)
      << slurp(scratch_.file("missing.err"));
  // A token the agents do not know.
  write_lab(3, 6, 8);
  std::ofstream(token_) << "another-token\n";
  EXPECT_EQ(run_fabemu(args, "token"), 2);
  EXPECT_NE(slurp(scratch_.file("token.err")).find("ERROR_AUTH_FAILED"), std::string::npos)
      << slurp(scratch_.file("token.err"));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(alive(agents_[i].pid));
}

}  // namespace
}  // namespace fabemu::lab
