#ifndef EDGEALLOC_TESTS_SUPPORT_REQUESTS_H_
#define EDGEALLOC_TESTS_SUPPORT_REQUESTS_H_

// What the tests ask of the storage seam and the allocator, built in one
// line: a container to register, a claim, a caller. Header only, on
// store/types.h alone, so that a test of any room can use it.

#include <cstdint>
#include <string>
#include <utility>

#include "store/types.h"

namespace testing {

inline store::ContainerSpec Spec(std::string id, std::string region,
                                     std::string pool = "default", int64_t latency_ms = 0,
                                     std::string data = "{}") {
  store::ContainerSpec s;
  s.id = std::move(id);
  s.region = std::move(region);
  s.pool = std::move(pool);
  s.latency_ms = latency_ms;
  s.data = std::move(data);
  return s;
}

inline store::ClaimRequest Req(std::string region, std::string tenant = "t1",
                                   std::string pool = "default") {
  store::ClaimRequest r;
  r.caller.tenant = std::move(tenant);
  r.region = std::move(region);
  r.pool = std::move(pool);
  return r;
}

inline store::Caller Tenant(std::string tenant) {
  store::Caller c;
  c.tenant = std::move(tenant);
  return c;
}

}  // namespace testing

#endif  // EDGEALLOC_TESTS_SUPPORT_REQUESTS_H_
