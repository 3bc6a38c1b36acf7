#include "base/random.h"

#include <catch2/catch.hpp>
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

TEST_CASE("random: every byte of the buffer is filled") {
  std::vector<unsigned char> buf(4096, 0);
  std::string error;
  REQUIRE(base::KernelRandomBytes(buf.data(), buf.size(), &error));
  CHECK(error.empty());
  // 64 random bytes are all zero with probability 256^-64: a chunk that is
  // was never written.
  for (size_t at = 0; at < buf.size(); at += 64) {
    INFO("bytes " << at << " to " << at + 63);
    CHECK(std::any_of(buf.begin() + static_cast<std::ptrdiff_t>(at),
                      buf.begin() + static_cast<std::ptrdiff_t>(at + 64),
                      [](unsigned char b) { return b != 0; }));
  }
}

TEST_CASE("random: two reads differ") {
  unsigned char a[32] = {}, b[32] = {};
  std::string error;
  REQUIRE(base::KernelRandomBytes(a, sizeof(a), &error));
  REQUIRE(base::KernelRandomBytes(b, sizeof(b), &error));
  CHECK(!std::equal(a, a + sizeof(a), b));
}
