#include "traces/reader.h"

#include <fmt/format.h>
#include <google/protobuf/unknown_field_set.h>

#include <algorithm>
#include <new>

#include "traces/file_kind.h"

namespace fabemu::traces {
namespace {

const char* wire_type_name(int wire_type) {
  switch (wire_type) {
    case 0: return "varint";
    case 1: return "64-bit";
    case 2: return "length-delimited";
    case 3: return "group start";
    case 4: return "group end";
    case 5: return "32-bit";
    default: return "invalid";
  }
}

// Describes the first field the current schema does not know; such fields mean the file was written
// with another schema (Chakra before October 2023 used proto2 numbering without GlobalMetadata).
std::string describe_unknown(const google::protobuf::UnknownFieldSet& unknown) {
  const auto& f = unknown.field(0);
  // UnknownField::Type order: VARINT, FIXED32, FIXED64, LENGTH_DELIMITED, GROUP.
  static constexpr int kWireType[] = {0, 5, 1, 2, 3};
  return fmt::format("field {} with wire type {}", f.number(),
                     wire_type_name(kWireType[static_cast<int>(f.type())]));
}

const google::protobuf::UnknownFieldSet& unknown_of(const google::protobuf::Message& m) {
  return m.GetReflection()->GetUnknownFields(m);
}

constexpr const char* kOldSchemaHint =
    "this does not match the current Chakra schema (ChakraProtoMsg 0.0.4); it looks like a trace "
    "written before October 2023 with the old proto2 numbering. Re-collect or re-convert it with a "
    "current Chakra release";

// --- the bounds of reader.h, checked on the wire before a node is parsed -------------------------------

// A protobuf varint at p (before end): advances p past it; false when it runs off the end or past 64 bits.
bool read_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; p < end && shift < 64; shift += 7) {
    const uint8_t b = *p++;
    v |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80u) == 0) return true;
  }
  return false;
}

// A protobuf message's fields, read without allocating. Malformed input just stops the walk: the parser
// that runs next says what is wrong with it.
class WireFields {
 public:
  WireFields(const uint8_t* p, uint64_t n) : p_(p), end_(p + n) {}
  // The next field; for length-delimited ones `data`/`size` are the payload. False at the end or on
  // malformed input.
  bool next(uint32_t& number, uint32_t& wire_type, const uint8_t*& data, uint64_t& size) {
    uint64_t tag = 0;
    if (p_ >= end_ || !varint(tag)) return false;
    number = static_cast<uint32_t>(tag >> 3);
    wire_type = static_cast<uint32_t>(tag & 7u);
    data = p_;
    uint64_t skip = 0;
    switch (wire_type) {
      case 0: return varint(size);
      case 1: skip = 8; break;
      case 5: skip = 4; break;
      case 2:
        if (!varint(skip)) return false;
        data = p_;
        break;
      default: return false;
    }
    if (skip > static_cast<uint64_t>(end_ - p_)) return false;
    size = skip;
    p_ += skip;
    return true;
  }

 private:
  bool varint(uint64_t& v) { return read_varint(p_, end_, v); }
  const uint8_t* p_;
  const uint8_t* end_;
};

// Values in a packed payload of `size` bytes: varints end in a byte below 0x80.
uint64_t packed_varints(const uint8_t* data, uint64_t size) {
  return static_cast<uint64_t>(std::count_if(data, data + size, [](uint8_t b) { return b < 0x80u; }));
}

// Values in one list attribute's payload (DoubleList, Int64List, StringList, ...: field 1, repeated).
uint64_t list_values(uint32_t list_field, const uint8_t* data, uint64_t size) {
  WireFields f(data, size);
  uint32_t number = 0, wire_type = 0;
  const uint8_t* payload = nullptr;
  uint64_t n = 0, values = 0;
  const bool strings = list_field == 30 || list_field == 32;               // StringList, BytesList
  const bool fixed64 = list_field == 4 || list_field == 22 || list_field == 26;  // double, (s)fixed64
  const bool fixed32 = list_field == 6 || list_field == 20 || list_field == 24;  // float, (s)fixed32
  while (f.next(number, wire_type, payload, n)) {
    if (wire_type != 2 || strings) {
      ++values;  // one unpacked value, or one string
    } else {
      values += fixed64 ? n / 8 : fixed32 ? n / 4 : packed_varints(payload, n);
    }
  }
  return values;
}

// What is wrong with the Node in `body`, or "" when it is within the bounds. `id` gets the node's id.
std::string node_over_limits(const uint8_t* body, uint64_t length, uint64_t& id) {
  uint64_t deps[2] = {0, 0};  // ctrl_deps (field 4), data_deps (field 5)
  uint64_t attrs = 0, values = 0;
  WireFields f(body, length);
  uint32_t number = 0, wire_type = 0;
  const uint8_t* data = nullptr;
  uint64_t n = 0;
  while (f.next(number, wire_type, data, n)) {
    if (number == 1 && wire_type == 0) id = n;
    if (number == 2 && wire_type == 2 && n > kMaxNameBytes) {
      return fmt::format("a name of {} bytes: a node name may have at most {} bytes", n, kMaxNameBytes);
    }
    if (number == 4 || number == 5) deps[number - 4] += wire_type == 2 ? packed_varints(data, n) : 1;
    if (number != 10 || wire_type != 2) continue;
    ++attrs;
    WireFields a(data, n);
    uint32_t an = 0, awt = 0;
    const uint8_t* ad = nullptr;
    uint64_t as = 0;
    while (a.next(an, awt, ad, as)) {
      if (an == 1 && awt == 2 && as > kMaxNameBytes) {
        return fmt::format("an attribute name of {} bytes: a name may have at most {} bytes", as, kMaxNameBytes);
      }
      if (awt == 2 && an >= 4 && an <= 32 && an % 2 == 0) values += list_values(an, ad, as);
    }
  }
  for (const int i : {1, 0}) {
    if (deps[i] > kMaxDepsPerNode) {
      return fmt::format("{} {}: a node may have at most {} (real traces have a few hundred at most)", deps[i],
                         i == 0 ? "ctrl_deps" : "data_deps", kMaxDepsPerNode);
    }
  }
  if (attrs > kMaxAttrsPerNode) {
    return fmt::format("{} attributes: a node may have at most {}", attrs, kMaxAttrsPerNode);
  }
  if (values > kMaxAttrValuesPerNode) {
    return fmt::format("{} values in list attributes: a node may have at most {} in all", values,
                       kMaxAttrValuesPerNode);
  }
  return "";
}

}  // namespace

TraceReader::TraceReader(const std::string& path, std::optional<int64_t> rank)
    : source_(path, rank), rank_(rank) {
  try {
    read_metadata();
  } catch (const TraceError& e) {
    throw as_non_trace(e);
  }
}

TraceError TraceReader::as_non_trace(const TraceError& e) const {
  const std::string what = describe_non_trace(source_.path());
  if (what.empty()) return e;
  return TraceError(location_at(0), what);
}

void TraceReader::read_metadata() {
  uint32_t length = 0;
  uint64_t offset = 0;
  const uint8_t* body = read_frame(length, offset, "GlobalMetadata", std::nullopt);
  if (body == nullptr) {
    throw TraceError(location_at(0), "empty file: a Chakra trace starts with a GlobalMetadata message");
  }
  if (!metadata_.ParseFromArray(body, static_cast<int>(length))) {
    throw TraceError(location_at(offset),
                     fmt::format("the first message ({} bytes) is not a valid GlobalMetadata; {}",
                                 length, kOldSchemaHint));
  }
  if (!unknown_of(metadata_).empty()) {
    throw TraceError(location_at(offset),
                     fmt::format("the first message is not a GlobalMetadata ({}); {}",
                                 describe_unknown(unknown_of(metadata_)), kOldSchemaHint));
  }
  source_.consume(length);
}

Location TraceReader::location_at(uint64_t offset, std::optional<uint64_t> node_index,
                                  std::optional<uint64_t> node_id) const {
  return Location{.file = source_.path(),
                  .rank = rank_,
                  .offset = offset,
                  .node_index = node_index,
                  .node_id = node_id};
}

Location TraceReader::last_location() const {
  return location_at(last_offset_, nodes_read_ == 0 ? std::nullopt : std::optional(nodes_read_ - 1),
                     nodes_read_ == 0 ? std::nullopt : std::optional(last_id_));
}

const uint8_t* TraceReader::read_frame(uint32_t& length, uint64_t& frame_offset, const char* what,
                                       std::optional<uint64_t> node_index) {
  frame_offset = source_.offset();
  // varint32 length prefix; end of input before its first byte is the clean end of the file.
  uint64_t value = 0;
  int shift = 0;
  for (int i = 0;; ++i) {
    uint8_t byte = 0;
    if (!source_.get(byte)) {
      if (i == 0) return nullptr;
      throw TraceError(location_at(frame_offset, node_index),
                       fmt::format("file ends inside the length prefix of a {} (truncated file)", what));
    }
    value |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80u) == 0) break;
    shift += 7;
    if (i == 4) {
      throw TraceError(location_at(frame_offset, node_index),
                       fmt::format("corrupt length prefix of a {}: varint longer than 5 bytes", what));
    }
  }
  if (value > kMaxMessageBytes) {
    throw TraceError(location_at(frame_offset, node_index),
                     fmt::format("a {} of {} bytes is declared: more than the {} MiB limit for one message (a "
                                 "corrupt length prefix, or a message thousands of times larger than real traces "
                                 "hold; traces/README.md, \"Limits\")",
                                 what, value, kMaxMessageBytes >> 20));
  }
  length = static_cast<uint32_t>(value);
  if (source_.size() && source_.offset() + length > *source_.size()) {
    throw TraceError(location_at(frame_offset, node_index),
                     fmt::format("a {} of {} bytes is declared but only {} bytes remain in the file "
                                 "(truncated file or corrupt length)",
                                 what, length, *source_.size() - source_.offset()));
  }
  const uint8_t* body = source_.peek(length);
  if (body == nullptr) {
    throw TraceError(location_at(frame_offset, node_index),
                     fmt::format("a {} of {} bytes is declared but only {} bytes remain in the file "
                                 "(truncated file or corrupt length)",
                                 what, length, source_.available()));
  }
  return body;
}

bool TraceReader::next(Node& node) {
  if (failed_) throw *failed_;
  try {
    return next_impl(node);
  } catch (const TraceError& e) {
    fail(nodes_read_ == 0 ? as_non_trace(e) : e);  // a text file can frame a GlobalMetadata by chance
  } catch (const std::bad_alloc&) {
    fail(TraceError(location_at(source_.offset(), nodes_read_), out_of_memory_text()));
  }
}

std::string TraceReader::out_of_memory_text() const {
  return fmt::format("out of memory reading this node ({} bytes of the file read so far, {} nodes)",
                     source_.offset(), nodes_read_);
}

void TraceReader::fail(const TraceError& error) {
  failed_ = error;
  throw error;
}

bool TraceReader::next_impl(Node& node) {
  uint32_t length = 0;
  uint64_t offset = 0;
  const uint8_t* body = read_frame(length, offset, "Node", nodes_read_);
  if (body == nullptr) return false;
  // The smallest Node that can break a bound holds more than kMaxAttrsPerNode attributes of 2 bytes (a tag
  // and an empty length); every other bound needs more bytes. Smaller nodes, nearly all, skip the walk.
  constexpr uint64_t kSmallestOverLimits = 2 * kMaxAttrsPerNode + 1;
  uint64_t id = 0;
  if (const std::string why = length < kSmallestOverLimits ? std::string() : node_over_limits(body, length, id);
      !why.empty()) {
    throw TraceError(location_at(offset, nodes_read_, id),
                     fmt::format("the Node has {} (a bound far above real traces, against hostile input; "
                                 "traces/README.md, \"Limits\")",
                                 why));
  }
  // A zero-length frame is an all-default Node (id 0, INVALID_NODE), not the end of the file.
  if (!node.ParseFromArray(body, static_cast<int>(length))) {
    throw TraceError(location_at(offset, nodes_read_),
                     fmt::format("not a valid Node message ({} bytes): a field is malformed or a string field is "
                                 "not valid UTF-8; the file is corrupt",
                                 length));
  }
  if (!unknown_of(node).empty()) {
    throw TraceError(location_at(offset, nodes_read_, node.id()),
                     fmt::format("the Node has a {}; {}", describe_unknown(unknown_of(node)),
                                 kOldSchemaHint));
  }
  if (!ChakraProtoMsg::NodeType_IsValid(node.type())) {
    throw TraceError(location_at(offset, nodes_read_, node.id()),
                     fmt::format("unknown node type {} (known: 0..7, INVALID_NODE..COMM_COLL_NODE)",
                                 static_cast<int>(node.type())));
  }
  source_.consume(length);
  last_offset_ = offset;
  last_id_ = node.id();
  ++nodes_read_;
  return true;
}

bool TraceReader::next_id(uint64_t& id) {
  if (failed_) throw *failed_;
  try {
    return next_id_impl(id);
  } catch (const TraceError& e) {
    fail(e);
  }
}

bool TraceReader::next_id_impl(uint64_t& id) {
  uint32_t length = 0;
  uint64_t offset = 0;
  const uint8_t* p = read_frame(length, offset, "Node", nodes_read_);
  if (p == nullptr) return false;
  const uint8_t* const end = p + length;
  auto varint = [&](uint64_t& v) { return read_varint(p, end, v); };
  id = 0;
  while (p < end) {
    uint64_t tag = 0;
    uint64_t value = 0;
    bool ok = varint(tag);
    switch (tag & 7u) {
      case 0: ok = ok && varint(value); break;
      case 1: value = 8; break;
      case 2: ok = ok && varint(value); break;
      case 5: value = 4; break;
      default: ok = false;
    }
    if (ok && (tag & 7u) == 0 && (tag >> 3) == 1) {
      id = value;
    } else if (ok && (tag & 7u) != 0) {
      ok = value <= static_cast<uint64_t>(end - p);
      if (ok) p += value;
    }
    if (!ok) {
      throw TraceError(location_at(offset, nodes_read_),
                       fmt::format("not a valid Node message ({} bytes); the file is corrupt", length));
    }
  }
  source_.consume(length);
  last_offset_ = offset;
  last_id_ = id;
  ++nodes_read_;
  return true;
}

}  // namespace fabemu::traces
