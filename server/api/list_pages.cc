#include "server/api/list_pages.h"

#include "server/api/request_bodies.h"

namespace server {

std::optional<Response> ReadRegionPoolFilter(const RouteRequest& req, std::string* region,
                                             std::string* pool) {
  for (auto [name, field] : {std::pair{"region", region}, {"pool", pool}}) {
    if (!req.QueryParam(name, field)) continue;
    if (Utf8Chars(*field) > kMaxNameChars) return LongParamResponse(name);
    if (HasNul(*field)) return NulParamResponse(name);
  }
  return std::nullopt;
}

std::optional<Response> ReadPageParams(const RouteRequest& req, const CursorKey& key,
                                       uint64_t fingerprint, int* limit, std::string* after) {
  std::string limit_param, cursor_param;
  const bool has_limit = req.QueryParam("limit", &limit_param);
  const bool has_cursor = req.QueryParam("cursor", &cursor_param);
  BodyError error;
  if (!ParseListPage(has_limit ? &limit_param : nullptr, has_cursor ? &cursor_param : nullptr,
                     key, fingerprint, limit, after, &error)) {
    return BodyErrorResponse(error);
  }
  return std::nullopt;
}

}  // namespace server
