#include "store/status.h"

namespace store {

std::string Status::ToString() const {
  const char* name = "OK";
  switch (code_) {
    case Code::kOk: return "OK";
    case Code::kNotFound: name = "NotFound"; break;
    case Code::kConflict: name = "Conflict"; break;
    case Code::kBusy: name = "Busy"; break;
    case Code::kInvalidArgument: name = "InvalidArgument"; break;
    case Code::kIOError: name = "IOError"; break;
    case Code::kCorruption: name = "Corruption"; break;
  }
  return std::string(name) + ": " + message_;
}

}  // namespace store
