#include "server/api/heartbeat_routes.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <string>

#include "base/clock.h"

namespace server {
namespace {

using nlohmann::json;
using batcher::Heartbeat;

bool FieldFail(BodyError* error, const std::string& field, const std::string& what) {
  error->code = "invalid_field";
  error->message = field + ": " + what;
  return false;
}

// Null counts as absent, as in the other bodies (json_io.cc).
const json* Optional(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

bool ParseItem(const json& item, const std::string& at, int64_t accepted_ms, int64_t max_ts_ms,
               int64_t max_clock_skew_ms, Heartbeat* out, BodyError* error) {
  if (!item.is_object()) return FieldFail(error, at, "must be an object");
  const json* id = Optional(item, "container_id");
  if (!id) return FieldFail(error, at + ".container_id", "is required");
  if (!id->is_string()) return FieldFail(error, at + ".container_id", "must be a string");
  const std::string& s = id->get_ref<const std::string&>();
  const size_t chars = Utf8Chars(s);
  if (chars < 1 || chars > kMaxNameChars) {
    return FieldFail(error, at + ".container_id",
                     "must be 1 to " + std::to_string(kMaxNameChars) + " characters long");
  }
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
                           " ms ahead of the server's clock (--max-clock-skew-ms); check the "
                           "container's clock");
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

bool ParseHeartbeats(std::string_view body, int64_t accepted_ms, std::vector<Heartbeat>* out,
                     BodyError* error, int64_t max_clock_skew_ms) {
  // Saturates rather than overflows for a skew near INT64_MAX.
  const int64_t max_ts_ms =
      max_clock_skew_ms > std::numeric_limits<int64_t>::max() - accepted_ms
          ? std::numeric_limits<int64_t>::max()
          : accepted_ms + max_clock_skew_ms;
  json j;
  if (!ParseJsonObject(body, &j, error)) return false;
  const json* list = Optional(j, "heartbeats");
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

HeartbeatApi::HeartbeatApi(batcher::Batcher* batcher, const std::atomic<bool>* ready,
                           int64_t max_clock_skew_ms)
    : batcher_(batcher), ready_(ready), max_clock_skew_ms_(max_clock_skew_ms) {}

void HeartbeatApi::AddRoutes(Router* router) {
  router->Add(http::verb::post, "/v1/heartbeats", Access::kContainer,
              [this](RouteRequest req, Reply reply) { Post(std::move(req), std::move(reply)); });
}

void HeartbeatApi::Post(RouteRequest req, Reply reply) {
  // Not ready is starting or stopping: a heartbeat taken now might not be
  // written before exit, so the container is told to send it elsewhere or
  // again. The batcher says kStopping for the same reason a moment later.
  if (!ready_->load()) {
    return reply(ErrorResponse(503, "unavailable", "the server is starting or stopping; retry"));
  }
  // Liveness is judged by the server's clock at accept (API.md), taken once
  // for the whole request.
  std::vector<batcher::Heartbeat> items;
  BodyError error;
  if (!ParseHeartbeats(req.http.body(), base::NowMs(), &items, &error, max_clock_skew_ms_)) {
    return reply(ErrorResponse(400, error.code, error.message));
  }
  // A scoped container key reports its own containers only; one id outside
  // refuses the whole request, so that nothing of it is taken.
  for (size_t i = 0; i < items.size(); ++i) {
    if (!req.who.MayReport(items[i].container_id)) {
      return reply(ErrorResponse(403, "forbidden",
                                 "heartbeats[" + std::to_string(i) +
                                     "].container_id: this key may not report this container; "
                                     "nothing of this request was taken"));
    }
  }
  batcher::SubmitResult r = batcher_->Submit(std::move(items));
  switch (r.code) {
    case batcher::SubmitResult::Code::kAccepted:
      return reply(JsonResponse(202, "{\"accepted\":" + std::to_string(r.items) + "}"));
    case batcher::SubmitResult::Code::kOverloaded:
      return reply(ErrorResponse(
          503, "overloaded",
          "the heartbeat queue is full; nothing of this request was taken; retry after a second"));
    case batcher::SubmitResult::Code::kStopping:
      return reply(ErrorResponse(503, "unavailable", "the server is stopping; retry"));
    case batcher::SubmitResult::Code::kUnavailable:
      return reply(ErrorResponse(
          503, "unavailable",
          "the database could not be read; nothing of this request was taken; retry"));
  }
  reply(ErrorResponse(503, "unavailable", "the server is stopping; retry"));
}

}  // namespace server
