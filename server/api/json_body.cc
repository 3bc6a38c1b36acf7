#include "server/api/json_body.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "base/nearest_word.h"
#include "server/http/error_table.h"

namespace server {
namespace {

using nlohmann::json;

// The most bytes of an unknown name a message repeats: a body may hold a
// name of a megabyte, the client needs only to recognise it.
constexpr size_t kMaxNameEcho = 64;

// The deepest nesting of arrays and objects in `text`, strings skipped. Run
// before parsing so a body of a million '[' never reaches a recursive walk.
int NestingDepth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

std::string UnknownFieldMessage(std::string_view name, std::string_view at, FieldNames known) {
  const std::string shown = name.size() > kMaxNameEcho
                                ? std::string(name.substr(0, kMaxNameEcho)) + "..."
                                : std::string(name);
  std::string message =
      "unknown field \"" + (at.empty() ? shown : std::string(at) + "." + shown) + "\"";
  const std::vector<std::string> names(known.begin(), known.end());
  // A name longer than any known one is no typo of it (and the distance
  // of a long one would cost its length times theirs).
  const std::string near = name.size() <= kMaxNameEcho ? base::NearestWord(name, names) : "";
  if (!near.empty()) return message + "; did you mean \"" + near + "\"?";
  if (names.empty()) return message + "; this request takes no fields";
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  return message + "; known fields: " + list;
}

}  // namespace

bool RefuseBody(BodyError* error, ApiError code, std::string message) {
  error->code = CodeOf(code);
  error->message = std::move(message);
  return false;
}

bool ParseJsonObject(std::string_view body, json* out, BodyError* error) {
  if (NestingDepth(body) > kMaxJsonDepth) {
    return RefuseBody(error, ApiError::kInvalidJson,
                "body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  json j = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return RefuseBody(error, ApiError::kInvalidJson, "body is not valid JSON");
  }
  if (!j.is_object()) {
    return RefuseBody(error, ApiError::kInvalidJson, "body must be a JSON object");
  }
  *out = std::move(j);
  return true;
}

bool ParseJsonObject(std::string_view body, FieldNames known, json* out, BodyError* error) {
  return ParseJsonObject(body, out, error) && KnownFieldsOnly(*out, "", known, error);
}

bool KnownFieldsOnly(const json& object, std::string_view at, FieldNames known, BodyError* error) {
  for (auto member = object.begin(); member != object.end(); ++member) {
    const std::string& name = member.key();
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    return RefuseBody(error, ApiError::kInvalidRequest, UnknownFieldMessage(name, at, known));
  }
  return true;
}

}  // namespace server
