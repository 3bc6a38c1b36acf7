#include "server/api/request_bodies.h"

#include <nlohmann/json.hpp>

#include "allocator/allocator.h"
#include "server/api/json_body.h"
#include "server/api/tag_bodies.h"
#include "server/http/error_table.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>

namespace server {
namespace {

using batcher::Heartbeat;
using nlohmann::json;

bool FieldFail(BodyError* error, const std::string& field, const std::string& what) {
  return RefuseBody(error, ApiError::kInvalidField, field + ": " + what);
}

// PostgreSQL text cannot hold U+0000 (and libpq would cut a parameter at
// it), so no string bound for the database may: refused on both engines.
// True if any string of `j` (values and object keys, at any depth) holds NUL.
bool JsonHasNul(const json& j) {
  if (j.is_string()) return HasNul(j.get_ref<const std::string&>());
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      if (HasNul(key) || JsonHasNul(value)) return true;
    }
    return false;
  }
  if (j.is_array()) {
    for (const json& item : j) {
      if (JsonHasNul(item)) return true;
    }
  }
  return false;
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
  if (HasNul(s)) return FieldFail(error, field, kNoNul);
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

// Null counts as absent, as GetName and GetInt take it.
const json* Optional(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

bool ParseItem(const json& item, const std::string& at, int64_t accepted_ms, int64_t max_ts_ms,
               int64_t max_clock_skew_ms, Heartbeat* out, BodyError* error) {
  if (!item.is_object()) return FieldFail(error, at, "must be an object");
  if (!KnownFieldsOnly(item, at, kHeartbeatFields, error)) return false;
  const json* id = Optional(item, "container_id");
  if (!id) return FieldFail(error, at + ".container_id", "is required");
  if (!id->is_string()) return FieldFail(error, at + ".container_id", "must be a string");
  const std::string& s = id->get_ref<const std::string&>();
  const size_t chars = Utf8Chars(s);
  if (chars < 1 || chars > kMaxNameChars) {
    return FieldFail(error, at + ".container_id",
                     "must be 1 to " + std::to_string(kMaxNameChars) + " characters long");
  }
  if (HasNul(s)) return FieldFail(error, at + ".container_id", kNoNul);
  out->container_id = s;

  if (const json* ts = Optional(item, "ts_ms")) {
    const char* range = "must be an integer from 0 to 9223372036854775807 (ms since the epoch)";
    if (!ts->is_number_integer()) return FieldFail(error, at + ".ts_ms", range);
    if (ts->is_number_unsigned()) {
      uint64_t u = ts->get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return FieldFail(error, at + ".ts_ms", range);
      }
      out->ts_ms = static_cast<int64_t>(u);
    } else {
      int64_t v = ts->get<int64_t>();
      if (v < 0) return FieldFail(error, at + ".ts_ms", range);
      out->ts_ms = v;
    }
    if (*out->ts_ms > max_ts_ms) {
      return FieldFail(error, at + ".ts_ms",
                       "is more than " + std::to_string(max_clock_skew_ms) +
                           " ms ahead of the server's clock (--max-clock-skew-ms; on "
                           "PostgreSQL, the database's clock); check the container's clock");
    }
  }

  if (const json* load = Optional(item, "load")) {
    // A number beyond a double's range parses as infinity: no load at all.
    if (!load->is_number() || !std::isfinite(load->get<double>())) {
      return FieldFail(error, at + ".load", "must be a finite number");
    }
    out->load = load->get<double>();
  }

  if (const json* state = Optional(item, "state")) {
    const char* allowed = "must be \"ready\", \"draining\" or \"dead\"";
    if (!state->is_string()) return FieldFail(error, at + ".state", allowed);
    const std::string& v = state->get_ref<const std::string&>();
    if (v == "ready") {
      out->state = Heartbeat::State::kReady;
    } else if (v == "draining") {
      out->state = Heartbeat::State::kDraining;
    } else if (v == "dead") {
      out->state = Heartbeat::State::kDead;
    } else {
      return FieldFail(error, at + ".state", allowed);
    }
  }
  out->accepted_ms = accepted_ms;
  return true;
}

}  // namespace

bool ParseClaim(std::string_view body, int64_t max_lease_ms, store::ClaimRequest* out,
                BodyError* error) {
  json j;
  if (!ParseJsonObject(body, kClaimFields, &j, error)) return false;
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
      if (HasNul(r.get_ref<const std::string&>())) return FieldFail(error, field, kNoNul);
      out->fallback_regions.push_back(r.get<std::string>());
    }
  }
  if (!GetInt(j, "wait_ms", "wait_ms", false, 0, allocator::kMaxClaimWaitMs, &out->wait_ms,
              error)) {
    return false;
  }
  it = j.find("placement");
  if (it != j.end() && !it->is_null()) {
    if (!it->is_string() || !store::ParsePlacement(it->get_ref<const std::string&>(),
                                                   &out->placement)) {
      return FieldFail(error, "placement", "must be \"fittest\", \"packed\" or \"distributed\"");
    }
  }
  if (const json* labels = Optional(j, "labels")) {
    if (!ParseTags(*labels, "labels", "labels", &out->labels, error)) return false;
    if (labels->empty()) out->labels.clear();
  }
  if (const json* selector = Optional(j, "selector")) {
    if (!ParseSelector(*selector, &out->selector, error)) return false;
  }
  return true;
}

bool ParseRenew(std::string_view body, int64_t max_lease_ms, int64_t* token, int64_t* lease_ms,
                bool* shorten, BodyError* error) {
  json j;
  if (!ParseJsonObject(body, kRenewFields, &j, error)) return false;
  *shorten = false;
  if (auto it = j.find("shorten"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) return FieldFail(error, "shorten", "must be true or false");
    *shorten = it->get<bool>();
  }
  if (!GetInt(j, "token", "token", true, std::numeric_limits<int64_t>::min(),
              std::numeric_limits<int64_t>::max(), token, error)) {
    return false;
  }
  *lease_ms = 0;
  return GetInt(j, "lease_ms", "lease_ms", false, 1, max_lease_ms, lease_ms, error);
}

bool ParseRegistration(std::string_view body, std::vector<store::ContainerSpec>* out,
                       BodyError* error) {
  json j;
  if (!ParseJsonObject(body, kRegistrationFields, &j, error)) return false;
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
    if (!KnownFieldsOnly(c, at, kContainerSpecFields, error)) return false;
    store::ContainerSpec spec;
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
    if (!GetInt(c, "slots", at + ".slots", false, store::kMinSlots, store::kMaxSlots, &spec.slots,
                error)) {
      return false;
    }
    auto d = c.find("data");
    if (d != c.end() && !d->is_null()) {
      if (!d->is_object()) return FieldFail(error, at + ".data", "must be a JSON object");
      if (JsonHasNul(*d)) {
        return FieldFail(error, at + ".data", "no key or string in it " + std::string(kNoNul));
      }
      spec.data = Dump(*d);
    }
    if (const json* attributes = Optional(c, "attributes")) {
      std::string text;
      if (!ParseTags(*attributes, at + ".attributes", "attributes", &text, error)) return false;
      spec.attributes = std::move(text);
    }
    out->push_back(std::move(spec));
  }
  return true;
}

bool ParseHeartbeats(std::string_view body, int64_t accepted_ms, std::vector<Heartbeat>* out,
                     BodyError* error, int64_t max_clock_skew_ms, int64_t engine_offset_ms,
                     size_t* items_sent) {
  // The bound is on the engine's clock (the database's, on PostgreSQL), the
  // one liveness and leases are judged by. Saturates rather than overflows
  // for a skew near INT64_MAX.
  const int64_t engine_now_ms = accepted_ms + engine_offset_ms;
  const int64_t max_ts_ms =
      max_clock_skew_ms > std::numeric_limits<int64_t>::max() - engine_now_ms
          ? std::numeric_limits<int64_t>::max()
          : engine_now_ms + max_clock_skew_ms;
  json j;
  if (!ParseJsonObject(body, &j, error)) return false;
  const json* list = Optional(j, "heartbeats");
  if (items_sent != nullptr && list && list->is_array()) *items_sent = list->size();
  // After the count: a refused body's items are spent from its key's budget.
  if (!KnownFieldsOnly(j, "", kHeartbeatsFields, error)) return false;
  if (!list) return FieldFail(error, "heartbeats", "is required");
  if (!list->is_array()) return FieldFail(error, "heartbeats", "must be an array of heartbeats");
  if (list->empty()) return FieldFail(error, "heartbeats", "must hold at least one heartbeat");
  if (list->size() > kMaxHeartbeatsPerRequest) {
    return FieldFail(error, "heartbeats",
                     "at most " + std::to_string(kMaxHeartbeatsPerRequest) +
                         " a request; send the rest in another");
  }
  out->clear();
  out->resize(list->size());
  for (size_t i = 0; i < list->size(); ++i) {
    if (!ParseItem((*list)[i], "heartbeats[" + std::to_string(i) + "]", accepted_ms, max_ts_ms,
                   max_clock_skew_ms, &(*out)[i], error)) {
      return false;
    }
  }
  return true;
}

bool ParseNoBody(std::string_view body, BodyError* error) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return true;
  json j;
  return ParseJsonObject(body, FieldNames{}, &j, error);
}

bool HasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

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

}  // namespace server
