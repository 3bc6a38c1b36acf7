#ifndef EDGEALLOC_SERVER_API_REPLY_BODIES_H_
#define EDGEALLOC_SERVER_API_REPLY_BODIES_H_

#include <string>

#include "store/types.h"

namespace server {

// The JSON bodies of the API's success replies (API.md), made on an io
// thread. A container's `data` is JSON object text from the store, spliced in
// as it is, never re-parsed.
std::string SessionJson(const store::Session& session);
std::string ContainerJson(const store::ContainerInfo& container);
// GET /v1/limits: max_sessions is null when store::kUnlimited.
std::string LimitsJson(const std::string& tenant, int64_t max_sessions, int64_t sessions);

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_REPLY_BODIES_H_
