// ParseHeartbeats on any body: never crashes, leaks or hits UB; a success
// holds 1 to kMaxHeartbeatsPerRequest items with ids in bounds and
// non-negative timestamps, a failure says why.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "batcher/heartbeat.h"
#include "fuzz/fuzz_check.h"
#include "server/api/request_bodies.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  std::vector<batcher::Heartbeat> beats;
  server::BodyError error;
  if (!server::ParseHeartbeats(body, /*accepted_ms=*/1790000000000, &beats, &error)) {
    CheckBodyError(error);
    return 0;
  }
  FUZZ_CHECK(!beats.empty() && beats.size() <= server::kMaxHeartbeatsPerRequest, "item count");
  for (const batcher::Heartbeat& beat : beats) {
    const size_t id = server::Utf8Chars(beat.container_id);
    FUZZ_CHECK(id >= 1 && id <= server::kMaxNameChars, "container_id length");
    FUZZ_CHECK(!beat.ts_ms || *beat.ts_ms >= 0, "ts_ms");
  }
  return 0;
}
