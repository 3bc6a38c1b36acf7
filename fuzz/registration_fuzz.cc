// ParseRegistration on any body: never crashes, leaks or hits UB; every
// container of a success has its required fields in bounds and its `data`
// as JSON object text (the store splices it into replies unparsed).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/types.h"
#include "fuzz/fuzz_check.h"
#include "server/api/request_bodies.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  std::vector<store::ContainerSpec> specs;
  server::BodyError error;
  if (!server::ParseRegistration(body, &specs, &error)) {
    CheckBodyError(error);
    return 0;
  }
  for (const store::ContainerSpec& spec : specs) {
    const size_t id = server::Utf8Chars(spec.id);
    FUZZ_CHECK(id >= 1 && id <= server::kMaxNameChars, "id length");
    FUZZ_CHECK(!spec.region.empty(), "region");
    FUZZ_CHECK(spec.latency_ms >= 0, "latency_ms");
    nlohmann::json d = nlohmann::json::parse(spec.data, nullptr, /*allow_exceptions=*/false);
    FUZZ_CHECK(d.is_object(), "data is a JSON object");
  }
  return 0;
}
