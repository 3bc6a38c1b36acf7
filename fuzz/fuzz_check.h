#ifndef EDGEALLOC_FUZZ_FUZZ_CHECK_H_
#define EDGEALLOC_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "server/api/request_bodies.h"

// FUZZ_CHECK(cond, what): a broken contract found by a fuzzer. Unlike assert
// it stays in every build type; it prints and aborts, which libFuzzer reports
// as a crash and saves the input.
#define FUZZ_CHECK(cond, what)                                              \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s (%s)\n", __FILE__, \
                   __LINE__, #cond, what);                                  \
      std::abort();                                                         \
    }                                                                       \
  } while (0)

// A refused body says why as request_bodies.h promises: one of its codes and a
// message.
inline void CheckBodyError(const server::BodyError& error) {
  FUZZ_CHECK(error.code == "invalid_json" || error.code == "invalid_field" ||
                 error.code == "invalid_request", error.code.c_str());
  FUZZ_CHECK(!error.message.empty(), "empty message");
}

#endif  // EDGEALLOC_FUZZ_FUZZ_CHECK_H_
