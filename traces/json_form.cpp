#include "traces/json_form.h"

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>

#include <fstream>
#include <ostream>

#include "traces/writer.h"

namespace fabemu::traces {
namespace {
namespace pbu = google::protobuf::util;

std::string to_json(const google::protobuf::Message& message, const Location& where) {
  pbu::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string out;
  const auto status = pbu::MessageToJsonString(message, &out, options);
  if (!status.ok()) throw TraceError(where, "cannot express as JSON: " + status.ToString());
  return out;
}

void from_json(const std::string& line, google::protobuf::Message& message, const Location& where) {
  pbu::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = pbu::JsonStringToMessage(line, &message, options);
  if (!status.ok()) {
    throw TraceError(where, fmt::format("not a {} in fabemu's JSON form: {}", message.GetTypeName(),
                                        std::string(status.message())));
  }
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

uint64_t write_json(const std::string& et_path, std::ostream& out) {
  TraceReader reader(et_path);
  out << to_json(reader.metadata(), reader.location_at(0)) << '\n';
  Node node;
  while (reader.next(node)) out << to_json(node, reader.last_location()) << '\n';
  if (!out) throw TraceError({.file = et_path}, "writing the JSON output failed");
  return reader.nodes_read();
}

uint64_t write_et_from_json(const std::string& json_path, const std::string& et_path) {
  std::ifstream in(json_path);
  if (!in) throw TraceError({.file = json_path}, "cannot open");
  std::string line;
  uint64_t line_no = 1;
  if (!std::getline(in, line)) {
    throw TraceError({.file = json_path, .line = 1}, "empty file: the first line must be the GlobalMetadata");
  }
  GlobalMetadata metadata;
  from_json(line, metadata, {.file = json_path, .line = line_no});
  TraceWriter writer(et_path, metadata, ends_with(et_path, ".gz"));
  Node node;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    node.Clear();
    from_json(line, node, {.file = json_path, .line = line_no});
    try {
      writer.write(node);
    } catch (const TraceError& e) {
      throw TraceError({.file = json_path, .line = line_no, .node_id = node.id()}, e.detail());
    }
  }
  writer.close();
  return writer.nodes_written();
}

}  // namespace fabemu::traces
