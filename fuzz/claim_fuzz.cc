// ParseClaim on any body: never crashes, leaks or hits UB; a success obeys
// docs/api.md's bounds, a failure says why.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "store/types.h"
#include "fuzz/fuzz_check.h"
#include "server/config.h"
#include "server/api/request_bodies.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const int64_t max_lease_ms = server::ServeConfig{}.max_lease_ms;
  store::ClaimRequest req;
  server::BodyError error;
  if (!server::ParseClaim(body, max_lease_ms, &req, &error)) {
    CheckBodyError(error);
    return 0;
  }
  const size_t region = server::Utf8Chars(req.region);
  FUZZ_CHECK(region >= 1 && region <= server::kMaxNameChars, "region length");
  FUZZ_CHECK(req.lease_ms == 0 || (req.lease_ms >= 1 && req.lease_ms <= max_lease_ms),
             "lease_ms in range");
  FUZZ_CHECK(req.fallback_regions.size() <= server::kMaxFallbackRegions, "fallback count");
  return 0;
}
