// fabemu_fuzz_seeds OUT_DIR SOURCE_DIR [SHARED_DIR]: makes the seed corpus of every fuzz target in
// OUT_DIR/<target>/ (tests/fuzz/README.md): the small hand-written seeds committed in
// SOURCE_DIR/tests/fuzz/seeds/<target>/, inputs from the shared traces and configs (SHARED_DIR, else
// $FABEMU_SHARED_DIR, else SOURCE_DIR/../shared; skipped with a message when absent) and from the source tree's
// samples, and frames made with the project's own encoders. Existing files in OUT_DIR are replaced.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "host/lab/framing.h"
#include "host/wire/frame.h"
#include "host/wire/roce.h"
#include "traces/error.h"
#include "traces/json_form.h"

namespace {
namespace fs = std::filesystem;
namespace hd = fabemu::host::dpdk;
namespace lp = fabemu::lab::proto;

constexpr uintmax_t kMaxSeedBytes = 256 << 10;  // shared files larger than this are left out

fs::path g_out;
std::map<std::string, int> g_count;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void seed(const std::string& target, const std::string& name, const std::string& bytes) {
  const fs::path dir = g_out / target;
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary | std::ios::trunc) << bytes;
  ++g_count[target];
}

// Regular files under `dir` whose name ends in one of `suffixes`, sorted; at most `per_folder` of each folder.
std::vector<fs::path> files(const fs::path& dir, const std::vector<std::string>& suffixes, size_t per_folder = 1000) {
  std::vector<fs::path> all;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return all;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (!e.is_regular_file() || e.file_size() > kMaxSeedBytes) continue;
    const std::string name = e.path().filename().string();
    for (const auto& s : suffixes) {
      if (name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
        all.push_back(e.path());
        break;
      }
    }
  }
  std::sort(all.begin(), all.end());
  std::vector<fs::path> kept;
  std::map<fs::path, size_t> taken;
  for (const auto& p : all) {
    if (taken[p.parent_path()]++ < per_folder) kept.push_back(p);
  }
  return kept;
}

std::string flat_name(const fs::path& p, const fs::path& base) {
  std::string s = fs::relative(p, base).string();
  std::replace(s.begin(), s.end(), '/', '_');
  return s;
}

std::string frame_of(const lp::Envelope& e) { return fabemu::lab::encode_frame(e); }

void lab_seeds() {
  lp::Envelope hello;
  hello.mutable_hello()->set_version(lp::PROTOCOL_VERSION_CURRENT);
  hello.mutable_hello()->set_role(lp::ROLE_COORDINATOR);
  hello.mutable_hello()->set_nonce(std::string(32, 'n'));
  lp::Envelope challenge;
  challenge.mutable_challenge()->set_version(lp::PROTOCOL_VERSION_CURRENT);
  challenge.mutable_challenge()->set_role(lp::ROLE_AGENT);
  challenge.mutable_challenge()->set_nonce(std::string(32, 'a'));
  lp::Envelope auth;
  auth.mutable_auth_response()->set_mac(std::string(32, 'm'));
  lp::Envelope result;
  result.mutable_auth_result()->set_ok(true);
  result.mutable_auth_result()->set_mac(std::string(32, 'r'));
  result.mutable_auth_result()->set_agent_id("a");
  lp::Envelope heartbeat;
  heartbeat.mutable_heartbeat()->set_seq(7);
  lp::Envelope probe;
  probe.mutable_clock_probe()->set_seq(1);
  probe.mutable_clock_probe()->set_t1(123456789);
  lp::Envelope reply;
  reply.mutable_clock_reply()->set_seq(1);
  reply.mutable_clock_reply()->set_t1(123456789);
  lp::Envelope assign;
  auto* a = assign.mutable_assign_ranks();
  a->set_run_id("r1");
  a->set_world_size(2);
  a->set_fabric_config("model");
  for (uint32_t r = 0; r < 2; ++r) {
    auto* ra = a->add_ranks();
    ra->set_rank(r);
    ra->set_fabric("model");
    ra->set_endpoint("127.0.0.1:47100");
    ra->set_agent("a");
  }
  a->add_local_ranks(0);
  a->add_local_ranks(1);
  lp::Envelope shard;
  shard.mutable_trace_shard()->set_rank(0);
  shard.mutable_trace_shard()->set_name("w.0.et");
  shard.mutable_trace_shard()->set_bytes("\x05\x0a\x03\x30\x2e\x31");
  lp::Envelope start;
  start.mutable_start()->set_run_id("r1");
  (*start.mutable_start()->mutable_agent_macs())["a"] = std::string(6, '\x02');
  lp::Envelope stop;
  stop.mutable_stop()->set_reason("done");
  lp::Envelope error;
  error.mutable_error()->set_code(lp::ERROR_PROTOCOL);
  error.mutable_error()->set_text("no");

  const std::vector<std::pair<std::string, const lp::Envelope*>> all = {
      {"hello", &hello},   {"challenge", &challenge}, {"auth_response", &auth}, {"auth_result", &result},
      {"heartbeat", &heartbeat}, {"clock_probe", &probe}, {"clock_reply", &reply}, {"assign_ranks", &assign},
      {"trace_shard", &shard}, {"start", &start}, {"stop", &stop}, {"error", &error}};
  std::string stream;
  for (const auto& [name, e] : all) {
    seed("fuzz_lab_framing", name, std::string(1, '\0') + frame_of(*e));
    stream += frame_of(*e);
  }
  seed("fuzz_lab_framing", "stream", std::string(1, '\1') + stream);
  // Handshake: byte 0 = 0 (the agent, first input), 1 (the agent, authenticated), 2 (the client).
  seed("fuzz_lab_handshake", "agent_hello", std::string(1, '\0') + frame_of(hello));
  seed("fuzz_lab_handshake", "agent_hello_auth", std::string(1, '\0') + frame_of(hello) + frame_of(auth));
  seed("fuzz_lab_handshake", "agent_ready",
       std::string(1, '\1') + frame_of(heartbeat) + frame_of(probe) + frame_of(stop));
  seed("fuzz_lab_handshake", "agent_run", std::string(1, '\1') + frame_of(assign) + frame_of(shard) + frame_of(start));
  seed("fuzz_lab_handshake", "client_challenge", std::string(1, '\2') + frame_of(challenge) + frame_of(result));
  seed("fuzz_lab_handshake", "client_error", std::string(1, '\2') + frame_of(error));
}

void wire_seeds() {
  for (const bool roce : {false, true}) {
    for (const hd::PacketKind kind : {hd::PacketKind::kData, hd::PacketKind::kAck, hd::PacketKind::kNack}) {
      hd::FrameSpec spec;
      spec.mode = roce ? hd::WireMode::kRoceV2 : hd::WireMode::kFabemu;
      spec.src = {.mac = {2, 0, 0, 0, 0, 1}, .ip = 0xC6120001, .port = hd::flow_source_port(1)};
      spec.dst = {.mac = {2, 0, 0, 0, 0, 2}, .ip = 0xC6120002, .port = 47000};
      spec.dscp = 26;
      spec.ecn = hd::Ecn::kEct0;
      spec.hdr = {.kind = kind, .src_rank = 1, .dst_rank = 2, .message_id = 9, .seq = 1, .count = 3,
                  .message_length = 3000, .offset = kind == hd::PacketKind::kData ? 1000u : 3u, .tx_time_ps = 5};
      const uint32_t missing[] = {1, 2};
      if (kind == hd::PacketKind::kNack) spec.missing = missing;
      if (kind == hd::PacketKind::kAck) spec.hdr.offset = 0;
      spec.payload_bytes = kind == hd::PacketKind::kData ? 1000 : 0;
      hd::set_data_bth(spec.bth, spec.hdr.seq, spec.hdr.count);
      std::string frame(hd::frame_bytes(spec.mode, 1000) + 64, '\0');
      const size_t len = hd::encode(spec, {reinterpret_cast<uint8_t*>(frame.data()), frame.size()});
      frame.resize(len);
      const std::string name = std::string(roce ? "roce_" : "fabemu_") + std::string(kind == hd::PacketKind::kData ? "data" : kind == hd::PacketKind::kAck ? "ack" : "nack");
      seed("fuzz_wire", name, std::string(1, static_cast<char>(roce ? 1 : 0)) + frame);
      seed("fuzz_wire", name + "_repair", std::string(1, static_cast<char>(roce ? 3 : 2)) + frame);
      // The socket fabric's datagram: the fabemu header onward (byte 0 is not read by decode_datagram).
      const size_t header_at = hd::kEthHeaderBytes + hd::kIpv4HeaderBytes + hd::kUdpHeaderBytes + (roce ? hd::kBthBytes : 0);
      if (!roce) seed("fuzz_wire", name + "_datagram", std::string(1, '\0') + frame.substr(header_at));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fabemu_fuzz_seeds OUT_DIR SOURCE_DIR [SHARED_DIR]\n");
    return 2;
  }
  g_out = argv[1];
  const fs::path source = argv[2];
  fs::path shared = source / ".." / "shared";
  if (const char* env = std::getenv("FABEMU_SHARED_DIR"); env != nullptr && *env != '\0') shared = env;
  if (argc > 3) shared = argv[3];
  std::error_code ec;
  fs::remove_all(g_out, ec);

  // Committed seeds.
  const fs::path committed = source / "tests" / "fuzz" / "seeds";
  for (const auto& dir : fs::directory_iterator(committed, ec)) {
    if (!dir.is_directory()) continue;
    for (const auto& f : files(dir.path(), {""})) seed(dir.path().filename().string(), "committed_" + flat_name(f, dir.path()), slurp(f));
  }

  // Shared traces: two files of each folder.
  const fs::path traces = shared / "traces";
  if (!fs::is_directory(traces, ec)) {
    std::printf("fabemu_fuzz_seeds: %s is absent: no seeds from the shared traces and configs\n", traces.c_str());
  }
  for (const auto& p : files(traces, {".et"}, 2)) {
    const std::string name = flat_name(p, traces);
    const std::string bytes = slurp(p);
    seed("fuzz_trace_reader", name, bytes);
    seed("fuzz_trace_gzip", name, std::string(1, '\0') + bytes);
    std::ostringstream json;
    try {
      fabemu::traces::write_json(p.string(), json);
      seed("fuzz_json_lines", name + ".jsonl", json.str());
    } catch (const fabemu::traces::TraceError& e) {
      std::printf("fabemu_fuzz_seeds: %s: %s\n", p.c_str(), e.what());
    }
  }
  for (const auto& p : files(traces, {".txt"})) seed("fuzz_astra_text", flat_name(p, traces), slurp(p));
  for (const auto& p : files(traces, {".xml"})) seed("fuzz_msccl_xml", flat_name(p, traces), slurp(p));
  for (const auto& p : files(source / "tests" / "emulator" / "custom", {".xml"})) seed("fuzz_msccl_xml", "test_" + p.filename().string(), slurp(p));
  for (const auto& p : files(source / "traces" / "samples", {".txt"})) seed("fuzz_astra_text", "sample_" + p.filename().string(), slurp(p));
  for (const auto& p : files(source / "traces" / "samples", {".yaml"})) seed("fuzz_fabric_yaml", "sample_" + p.filename().string(), slurp(p));
  const fs::path configs = shared / "configs";
  for (const auto& p : files(configs, {".yml"})) seed("fuzz_network_yml", flat_name(p, configs), slurp(p));
  for (const auto& p : files(configs, {".json"})) seed("fuzz_system_json", flat_name(p, configs), slurp(p));
  lab_seeds();
  wire_seeds();
  for (const auto& [target, n] : g_count) std::printf("fabemu_fuzz_seeds: %s: %d seeds\n", target.c_str(), n);
  return 0;
}
