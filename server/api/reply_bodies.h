#ifndef EDGEALLOC_SERVER_API_REPLY_BODIES_H_
#define EDGEALLOC_SERVER_API_REPLY_BODIES_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/types.h"

namespace server {

// The JSON bodies of the API's success replies (docs/api.md), made on an io
// thread. A container's `data` is JSON object text from the store, spliced in
// as it is, never re-parsed.
std::string SessionJson(const store::Session& session);
std::string ContainerJson(const store::ContainerInfo& container);
// GET /v1/sessions and GET /v1/containers: a page's `items` (each item's
// JSON, comma-separated) under `name`, and the cursor of the next page (null
// on the last).
std::string ListJson(std::string_view name, std::string_view items,
                     const std::optional<std::string>& next_cursor);
// An ended session: the session as it ended, with end_reason and
// ended_at_ms (GET /v1/sessions?state=ended lists them).
std::string EndedSessionJson(const store::EndedSession& ended);
// GET /v1/limits: max_sessions is null when store::kUnlimited.
// GET /v1/limits: each limit of `tenant` and its use now. `max_sessions`
// store::kUnlimited and a missing `claims_per_s` are null.
struct LimitsBody {
  std::string tenant;
  int64_t max_sessions = store::kUnlimited;
  int64_t sessions = 0;
  std::optional<double> claims_per_s;  // with claim_tokens, the tokens left now
  double claim_tokens = 0;
  int64_t max_waiters = 0;
  int64_t waiting = 0;
};
std::string LimitsJson(const LimitsBody& limits);

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_REPLY_BODIES_H_
