// ParseRenew on any body: never crashes, leaks or hits UB; a success obeys
// docs/api.md's bounds, a failure says why.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "server/config.h"
#include "server/api/request_bodies.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const int64_t max_lease_ms = server::ServeConfig{}.max_lease_ms;
  int64_t token = 0, lease_ms = -1;
  server::BodyError error;
  if (!server::ParseRenew(body, max_lease_ms, &token, &lease_ms, &error)) {
    CheckBodyError(error);
    return 0;
  }
  FUZZ_CHECK(lease_ms == 0 || (lease_ms >= 1 && lease_ms <= max_lease_ms), "lease_ms in range");
  return 0;
}
