// What a run of the emulator produces: per-rank, per-collective and per-link results (RunResult), and
// the slices of the timeline (TimelineSink), independent of how they are written out (report_json.h,
// timeline.h). All times are emulated picoseconds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "emulator/time.h"

namespace fabemu::emu {

struct RankResult {
  int32_t rank = 0;
  Time finish;                // when the rank's last node finished
  uint64_t nodes = 0;         // nodes walked (every type, METADATA included)
  uint64_t comp_nodes = 0;
  uint64_t comm_nodes = 0;    // COMM_COLL + SEND + RECV
  Duration compute_busy;      // time a compute stream (device or host) was busy
  Duration device_compute;    // sum of the device stream's COMP node durations (ASTRA-sim's tics_gpu_ops)
  Duration comm_busy;         // time at least one communication node was in flight
  // Time at least one communication node was in flight while no compute stream was busy: what
  // communication alone keeps the rank busy for ("comm, no compute" in the summary).
  Duration exposed_comm;
  // Time neither computing nor communicating (waiting for peers or dependencies): finish - compute_busy
  // - exposed_comm.
  Duration idle;
  // What ASTRA-sim prints as "exposed communication": finish time minus device compute time. It also
  // counts the time a rank waits for its peers (idle here), so it is >= exposed_comm when the host
  // stream is unused.
  Duration finish_minus_compute() const {
    return finish.since_start() > device_compute ? finish.since_start() - device_compute : Duration::zero();
  }
  // Messages it sent and received, and their bytes, counted as they were delivered (collective and
  // point-to-point; a message to itself counts on both sides).
  uint64_t sent_messages = 0, sent_bytes = 0;
  uint64_t received_messages = 0, received_bytes = 0;
  double compute_scale = 1.0;  // the --compute-scale factor applied to its COMP nodes
  bool finished = true;        // every node of the rank's trace finished (false: deadlocked or stopped)
};

// One collective instance: the matched nodes of all members of its group.
struct CollectiveResult {
  uint64_t index = 0;           // order in which instances were first issued (0, 1, ...)
  std::string type;             // "ALL_REDUCE", ...
  std::string group;            // normalized pg_name, "" = all ranks
  std::string name;             // node name on its lowest member rank
  uint64_t node_id = 0;         // node id on its lowest member rank
  uint64_t bytes = 0;           // comm_size (per rank, as the trace gives it)
  int32_t members = 0;
  std::string algorithm;        // e.g. "ring", "ring+ring" (per phase / dimension)
  uint64_t chunks = 0;
  uint64_t messages = 0;        // point-to-point messages it sent
  uint64_t message_bytes = 0;   // bytes those messages carried
  Time issued_first;            // first member issued it
  Time issued_last;             // last member issued it (it cannot end before every member joined)
  Time finished;                // last member finished it
  // finished - issued_last: the time the collective itself took once everyone was there.
  Duration duration() const { return finished - issued_last; }
  // nccl-tests conventions: algbw = size / duration; busbw = algbw x factor (2(n-1)/n for all-reduce,
  // (n-1)/n for all-gather / reduce-scatter / all-to-all, 1 otherwise). size = bytes, except all-gather
  // where it is bytes x members (comm_size is each rank's input). Bytes per second; 0 if duration is 0.
  double algbw_bytes_per_s = 0;
  double busbw_bytes_per_s = 0;
};

struct P2pResult {
  uint64_t sends = 0;          // SEND nodes matched with their RECV
  uint64_t bytes = 0;
};

struct LinkResult {
  uint32_t id = 0;
  int32_t from = 0;            // node ids: NPUs 0..N-1, then switches
  int32_t to = 0;
  int32_t dim = 0;
  std::string tier;            // "leaf" (NPU <-> leaf) or "spine" (leaf <-> spine) on a fat-tree dimension; else ""
  uint64_t bytes = 0;
  uint64_t packets = 0;
  Duration busy;               // serialization time spent (bytes x rate)
  double utilization = 0;      // busy / total time
};

// --link-series: each link's busy time per bin of `bin_ps` over the run (the packet model and the fabrics
// that replay it in software); empty without it. Links that carried nothing are left out.
struct LinkSeries {
  uint64_t bin_ps = 0;                          // bin width; bins cover [0, bins x bin_ps)
  std::vector<uint32_t> links;                  // link ids, ascending
  std::vector<std::vector<uint64_t>> busy_ps;   // per link in `links`: busy picoseconds per bin
  bool empty() const noexcept { return links.empty(); }
};

// Messages and bytes from each sender to each receiver, delivered during the run (the run page's traffic
// matrix; WalkerOptions::traffic_matrix; not written to the JSON report). Ranks are summed into blocks of
// `block` consecutive ranks so that the matrix has at most kMaxSide rows and columns whatever the scale.
struct TrafficMatrix {
  static constexpr uint32_t kMaxSide = 128;
  uint32_t ranks = 0;
  uint32_t block = 0;  // ranks per row / column; 0: not recorded
  uint32_t side = 0;   // rows = columns = ceil(ranks / block)
  std::vector<uint64_t> messages, bytes;  // [sender block x side + receiver block]

  TrafficMatrix() = default;
  // Sized for `ranks_in` ranks (allocated once).
  explicit TrafficMatrix(uint32_t ranks_in)
      : ranks(ranks_in), block(ranks_in == 0 ? 0 : (ranks_in + kMaxSide - 1) / kMaxSide),
        side(block == 0 ? 0 : (ranks_in + block - 1) / block),
        messages(static_cast<size_t>(side) * side), bytes(static_cast<size_t>(side) * side) {}
  bool empty() const noexcept { return block == 0; }
  void add(int32_t src, int32_t dst, uint64_t count, uint64_t total_bytes) noexcept {
    const size_t cell = static_cast<size_t>(static_cast<uint32_t>(src) / block) * side +
                        static_cast<uint32_t>(dst) / block;
    messages[cell] += count;
    bytes[cell] += total_bytes;
  }
};

// How a run ended. Anything but kComplete is a partial report: its times are how far the run got, and a
// regression gate (fabemu compare --max-regression) fails on it.
enum class RunStatus : uint8_t {
  kComplete,     // every rank finished
  kDeadlocked,   // the workload cannot finish (`stuck` says why)
  kInterrupted,  // SIGINT/SIGTERM stopped the run
  kStalled,      // a real-time fabric's wire stalled
  kIncomplete,   // ranks were lost (a lab agent died)
};
const char* run_status_name(RunStatus status);                       // "complete", "deadlocked", ...
std::optional<RunStatus> run_status_from_name(std::string_view name);

struct RunResult {
  std::string workload;        // the trace prefix
  std::string fabric;          // "software"
  std::string model;           // "analytical" | "packet"
  std::string topology;        // human summary, e.g. "Ring(8) 50 GB/s 500 ns"
  int32_t npus = 0;
  Time total;                  // the latest rank finish
  RunStatus status = RunStatus::kComplete;
  Time reached;                // emulated time when the run ended (= total when complete; later when stuck)
  std::vector<RankResult> ranks;
  std::vector<CollectiveResult> collectives;
  P2pResult p2p;
  std::vector<LinkResult> links;  // only links that carried traffic (packet model); empty otherwise
  LinkSeries link_series;         // with --link-series
  TrafficMatrix traffic;          // with WalkerOptions::traffic_matrix (fabemu run --html)
  uint64_t messages = 0;          // point-to-point messages handed to the fabric
  uint64_t message_bytes = 0;
  uint64_t events = 0;            // engine events run
  // Collective phases evaluated in closed form: one per chunk, phase (dimension) and subgroup.
  uint64_t collectives_closed_form = 0;
  std::vector<std::string> warnings;     // e.g. dangling dependencies dropped, per rank
  // Empty when every rank finished. Otherwise the run deadlocked: one line per waiting rank or
  // collective saying what it waits on (RECV without SEND, members that never issued a collective).
  std::vector<std::string> stuck;
  // Sections a backend adds to the JSON report after "stuck": (key, a JSON value rendered by the backend),
  // e.g. ("dpdk", ...) for --fabric dpdk. Written by report_to_json, not read back by report_from_json.
  std::vector<std::pair<std::string, std::string>> sections;
};

// Receives the timeline as the run goes (only when a timeline was asked for). Tracks per rank:
// 0 = compute stream, 1.. = communication streams. Times are emulated ps.
class TimelineSink {
 public:
  virtual ~TimelineSink() = default;
  // A finished node on a rank's stream.
  virtual void node_slice(int32_t rank, int32_t track, const std::string& name, const char* kind, uint64_t node_id,
                          Time start, Time end, uint64_t bytes) = 0;
  // One point-to-point message of a collective or a SEND, on its source rank.
  virtual void message_slice(int32_t src, int32_t dst, uint64_t bytes, Time sent, Time delivered,
                             uint64_t collective_index) = 0;
  // A counter track's value from `at` on: on a rank's process, or (rank -1) on the network's. Sinks that
  // keep no counters ignore it.
  virtual void counter(int32_t rank, const std::string& name, Time at, double value) {
    (void)rank, (void)name, (void)at, (void)value;
  }
};

}  // namespace fabemu::emu
