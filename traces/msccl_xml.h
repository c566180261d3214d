// MSCCL-IR XML (msccl-tools' output for an MSCCLang program) to Chakra: one SEND/RECV/COMP graph per GPU,
// as ASTRA-sim's converter (astra-sim/collectiveapi, chakra_converter) writes it, so that a custom collective
// goes from an MSCCLang program to an emulation without Python. The rules: docs/custom_collectives.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "traces/attrs.h"
#include "traces/custom_graph.h"

namespace fabemu::traces {

// Bounds on an XML file: its size, GPUs, thread blocks per GPU, steps in all, chunks per step.
inline constexpr size_t kMaxMscclBytes = size_t{64} << 20;
inline constexpr int32_t kMaxMscclGpus = kMaxCustomMembers;
inline constexpr int32_t kMaxMscclTbs = 1 << 12;
inline constexpr size_t kMaxMscclSteps = size_t{1} << 22;
inline constexpr int64_t kMaxMscclChunks = int64_t{1} << 20;

struct MscclStep {
  int32_t s = 0;
  std::string type;  // s, r, rrc, rcs, rrs, rrcs, re, cpy, nop
  int64_t cnt = 1;
  int32_t depid = -1;  // thread block of the step it depends on, -1 none
  int32_t deps = -1;   // that step
  uint64_t line = 0;
};

struct MscclTb {
  int32_t id = 0;
  int32_t send = -1;  // peer GPU of its sends, -1 none
  int32_t recv = -1;  // peer GPU of its receives, -1 none
  int32_t chan = 0;   // channel: the tag of its messages
  uint64_t line = 0;
  std::vector<MscclStep> steps;
};

struct MscclGpu {
  int32_t id = 0;
  int64_t i_chunks = 0, o_chunks = 0, s_chunks = 0;
  uint64_t line = 0;
  std::vector<MscclTb> tbs;  // by id
};

struct MscclAlgo {
  std::string path;
  std::string name;
  std::string coll;  // allreduce, allgather, reduce_scatter, alltoall, ...
  int32_t ngpus = 0;
  int64_t nchunksperloop = 0;
  int32_t nchannels = 0;
  std::vector<MscclGpu> gpus;  // by id
};

// Parses `text` (the file `path`, for messages). TraceError names the file, the line, the element and the
// attribute of anything missing, unknown, out of range or inconsistent (a dependency on a step that does
// not exist, a send step in a thread block without a send peer, ...).
MscclAlgo parse_msccl_xml(std::string_view text, const std::string& path);
// Reads and parses a file of at most kMaxMscclBytes.
MscclAlgo read_msccl_xml(const std::string& path);

// The collective an algorithm implements ("allreduce" -> ALL_REDUCE, ...); nullopt for others.
std::optional<CollectiveType> msccl_collective(const MscclAlgo& algo);

// The graphs of a collective of `bytes` (comm_size): chunk = bytes / i_chunks (o_chunks when 0; allgather:
// bytes), a step moves cnt chunks; node ids from 0 per GPU in thread-block, step order. Checked as
// check_custom_graphs does.
CustomGraphs msccl_to_graphs(const MscclAlgo& algo, uint64_t bytes);

// The GlobalMetadata its .et files start with.
GlobalMetadata msccl_metadata(const MscclAlgo& algo);

}  // namespace fabemu::traces
