// The lab control plane's one error type: what went wrong and the protocol code a peer is (or was) told.
#pragma once

#include <stdexcept>
#include <string>

#include "host/lab/lab.pb.h"

namespace fabemu::lab {

class LabError : public std::runtime_error {
 public:
  LabError(proto::ErrorCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  proto::ErrorCode code() const { return code_; }

 private:
  proto::ErrorCode code_;
};

}  // namespace fabemu::lab
