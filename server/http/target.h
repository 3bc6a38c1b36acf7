#ifndef EDGEALLOC_SERVER_HTTP_TARGET_H_
#define EDGEALLOC_SERVER_HTTP_TARGET_H_

#include <string>
#include <string_view>
#include <vector>

namespace server {

// Request targets and route patterns cut into path segments. Pure functions,
// safe from any thread.

// A request target as routes see it.
struct Target {
  std::vector<std::string> segments;  // percent-decoded, empty ones dropped
  std::string query;                  // after '?', still encoded
};
// Parses a request target in origin-form ("/a/b%20c?x=1") or absolute-form
// ("http://host/a/b%20c?x=1", scheme http or https; routed by its path) with
// Boost.URL. False with *error set if it is neither or is malformed (a bad
// percent escape such as "%zz", a character that must be escaped).
bool ParseTarget(std::string_view target, Target* out, std::string* error);

// Splits a route pattern "/a/{id}/" into {"a", "{id}"}: empty segments
// dropped, percent-decoded. Request targets go through ParseTarget.
std::vector<std::string> SplitPath(std::string_view path);
// Decodes %XX (and '+' as space when `plus_is_space`); a malformed % stays as
// is. Not used on request targets, which ParseTarget checks and decodes.
std::string PercentDecode(std::string_view s, bool plus_is_space);

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_TARGET_H_
