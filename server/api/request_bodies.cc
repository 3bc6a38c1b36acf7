#include "server/api/request_bodies.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <limits>
#include <unordered_map>

#include "server/http/message.h"

namespace server {
namespace {

using nlohmann::json;

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

bool Fail(BodyError* error, std::string code, std::string message) {
  error->code = std::move(code);
  error->message = std::move(message);
  return false;
}

bool FieldFail(BodyError* error, const std::string& field, const std::string& what) {
  return Fail(error, "invalid_field", field + ": " + what);
}

// A string field of 1..256 characters. Missing: *present false, ok unless
// required.
bool GetName(const json& obj, const char* key, const std::string& field, bool required,
             std::string* out, BodyError* error, bool* present = nullptr) {
  auto it = obj.find(key);
  if (present) *present = it != obj.end() && !it->is_null();
  if (it == obj.end() || it->is_null()) {
    return required ? FieldFail(error, field, "is required") : true;
  }
  if (!it->is_string()) return FieldFail(error, field, "must be a string");
  const std::string& s = it->get_ref<const std::string&>();
  size_t n = Utf8Chars(s);
  if (n < 1 || n > kMaxNameChars) {
    return FieldFail(error, field,
                     "must be 1 to " + std::to_string(kMaxNameChars) + " characters long");
  }
  *out = s;
  return true;
}

// An integer field in [lo, hi]. Missing leaves *out unchanged.
bool GetInt(const json& obj, const char* key, const std::string& field, bool required, int64_t lo,
            int64_t hi, int64_t* out, BodyError* error) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    return required ? FieldFail(error, field, "is required") : true;
  }
  std::string range = "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
  if (!it->is_number_integer()) return FieldFail(error, field, range);
  int64_t v;
  if (it->is_number_unsigned()) {
    uint64_t u = it->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return FieldFail(error, field, range);
    }
    v = static_cast<int64_t>(u);
  } else {
    v = it->get<int64_t>();
  }
  if (v < lo || v > hi) return FieldFail(error, field, range);
  *out = v;
  return true;
}

std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

bool ParseClaim(std::string_view body, int64_t max_lease_ms, allocator::ClaimRequest* out,
                BodyError* error) {
  json j;
  if (!ParseJsonObject(body, &j, error)) return false;
  if (!GetName(j, "region", "region", true, &out->region, error)) return false;
  if (!GetName(j, "pool", "pool", false, &out->pool, error)) return false;
  if (!GetInt(j, "lease_ms", "lease_ms", false, 1, max_lease_ms, &out->lease_ms, error)) {
    return false;
  }
  if (!GetName(j, "idempotency_key", "idempotency_key", false, &out->idempotency_key, error)) {
    return false;
  }
  auto it = j.find("fallback_regions");
  if (it != j.end() && !it->is_null()) {
    if (!it->is_array()) return FieldFail(error, "fallback_regions", "must be an array of strings");
    if (it->size() > kMaxFallbackRegions) {
      return FieldFail(error, "fallback_regions",
                       "at most " + std::to_string(kMaxFallbackRegions) + " regions");
    }
    for (size_t i = 0; i < it->size(); ++i) {
      std::string field = "fallback_regions[" + std::to_string(i) + "]";
      const json& r = (*it)[i];
      if (!r.is_string()) return FieldFail(error, field, "must be a string");
      size_t n = Utf8Chars(r.get_ref<const std::string&>());
      if (n < 1 || n > kMaxNameChars) {
        return FieldFail(error, field,
                         "must be 1 to " + std::to_string(kMaxNameChars) + " characters long");
      }
      out->fallback_regions.push_back(r.get<std::string>());
    }
  }
  return true;
}

bool ParseRenew(std::string_view body, int64_t max_lease_ms, int64_t* token, int64_t* lease_ms,
                BodyError* error) {
  json j;
  if (!ParseJsonObject(body, &j, error)) return false;
  if (!GetInt(j, "token", "token", true, std::numeric_limits<int64_t>::min(),
              std::numeric_limits<int64_t>::max(), token, error)) {
    return false;
  }
  *lease_ms = 0;
  return GetInt(j, "lease_ms", "lease_ms", false, 1, max_lease_ms, lease_ms, error);
}

bool ParseRegistration(std::string_view body, std::vector<allocator::ContainerSpec>* out,
                       BodyError* error) {
  json j;
  if (!ParseJsonObject(body, &j, error)) return false;
  auto it = j.find("containers");
  if (it == j.end() || it->is_null()) return FieldFail(error, "containers", "is required");
  if (!it->is_array()) return FieldFail(error, "containers", "must be an array of containers");
  out->clear();
  out->reserve(it->size());
  std::unordered_map<std::string, size_t> index_of_id;  // to refuse an id named twice
  for (size_t i = 0; i < it->size(); ++i) {
    std::string at = "containers[" + std::to_string(i) + "]";
    const json& c = (*it)[i];
    if (!c.is_object()) return FieldFail(error, at, "must be an object");
    allocator::ContainerSpec spec;
    if (!GetName(c, "id", at + ".id", true, &spec.id, error)) return false;
    auto [first, fresh] = index_of_id.emplace(spec.id, i);
    if (!fresh) {
      return FieldFail(error, at + ".id",
                       "names the same container as containers[" +
                           std::to_string(first->second) + "].id; each id at most once");
    }
    if (!GetName(c, "region", at + ".region", true, &spec.region, error)) return false;
    if (!GetName(c, "pool", at + ".pool", false, &spec.pool, error)) return false;
    if (!GetInt(c, "latency_ms", at + ".latency_ms", false, 0,
                std::numeric_limits<int32_t>::max(), &spec.latency_ms, error)) {
      return false;
    }
    auto d = c.find("data");
    if (d != c.end() && !d->is_null()) {
      if (!d->is_object()) return FieldFail(error, at + ".data", "must be a JSON object");
      spec.data = Dump(*d);
    }
    out->push_back(std::move(spec));
  }
  return true;
}

bool ParseJsonObject(std::string_view body, json* out, BodyError* error) {
  if (NestingDepth(body) > kMaxJsonDepth) {
    return Fail(error, "invalid_json",
                "body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  json j = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Fail(error, "invalid_json", "body is not valid JSON");
  if (!j.is_object()) return Fail(error, "invalid_json", "body must be a JSON object");
  *out = std::move(j);
  return true;
}

size_t Utf8Chars(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool ParseInt64(std::string_view text, int64_t* out) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return false;
  *out = v;
  return true;
}

std::string SessionJson(const allocator::Session& s) {
  std::string out;
  out.reserve(192 + s.data.size());
  out += "{\"session_id\":" + JsonQuote(s.session_id);
  out += ",\"container_id\":" + JsonQuote(s.container_id);
  out += ",\"region\":" + JsonQuote(s.region);
  out += ",\"pool\":" + JsonQuote(s.pool);
  out += ",\"token\":" + std::to_string(s.token);
  out += ",\"lease_expires_at_ms\":" + std::to_string(s.lease_expires_at_ms);
  out += ",\"data\":";
  out += s.data.empty() ? "{}" : s.data;
  out += "}";
  return out;
}

std::string ContainerJson(const allocator::ContainerInfo& c) {
  std::string out;
  out.reserve(192 + c.data.size());
  out += "{\"id\":" + JsonQuote(c.id);
  out += ",\"region\":" + JsonQuote(c.region);
  out += ",\"pool\":" + JsonQuote(c.pool);
  out += ",\"status\":" + JsonQuote(c.status);
  out += ",\"latency_ms\":" + std::to_string(c.latency_ms);
  out += ",\"last_heartbeat_ms\":" + std::to_string(c.last_heartbeat_ms);
  out += ",\"drain_requested\":";
  out += c.drain_requested ? "true" : "false";
  if (c.session_id) out += ",\"session_id\":" + JsonQuote(*c.session_id);
  out += ",\"data\":";
  out += c.data.empty() ? "{}" : c.data;
  out += "}";
  return out;
}

}  // namespace server
