// Converts ASTRA-sim 1.0 text workloads to Chakra traces exactly as Chakra's `chakra_converter Text` does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fabemu::traces {

struct AstraTextOptions {
  int64_t num_npus = 1;    // ranks to write (0..num_npus-1); >= 1
  int64_t num_passes = 1;  // training iterations per rank; >= 1
};

// Converts the ASTRA-sim 1.0 text workload `input_path` to Chakra traces `<output_prefix>.<rank>.et`
// for ranks 0..num_npus-1 and returns the paths written (in rank order). The output is byte-identical
// to `chakra_converter Text --num-npus N --num-passes P` (mlcommons/chakra text_converter.py), including
// its quirks: node ids run on across ranks, an unknown or "NONE" comm type becomes ALL_REDUCE, and the
// GlobalMetadata carries the schema string and the whole input text (newlines normalised to "\n").
//
// Supported parallelism types (first token of line 1): MICRO, DATA, MODEL, HYBRID_DATA_MODEL,
// HYBRID_MODEL_DATA, HYBRID_DLRM and HYBRID_DLRM_ENHANCED (these two take the last bottom-MLP layer
// index as the second token of line 1). Line 2 is the layer count; each following non-blank line is a
// layer: name, reserved, fwd compute, fwd comm type, fwd comm size, input-grad compute, type, size,
// weight-grad compute, type, size, update time.
//
// Throws TraceError naming the file and line for unreadable input (missing file, unknown parallelism
// type, non-numeric or negative field, too few columns, a layer count that does not match the layers)
// and std::invalid_argument for options out of range. Output directories are created as needed.
// Whether `word` is a parallelism type above: what line 1 of a text workload starts with.
bool is_astra_text_parallelism(std::string_view word);

std::vector<std::string> convert_astra_text(const std::string& input_path, const std::string& output_prefix,
                                            const AstraTextOptions& options);

}  // namespace fabemu::traces
