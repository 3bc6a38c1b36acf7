#include "server/api/heartbeat_routes.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/json_string.h"
#include "batcher/coalesce.h"
#include "server/api/errors.h"
#include "server/api/request_bodies.h"

namespace server {

namespace {

// The reply's `drain` member: the ids of `items` an operator drained, as of
// the snapshot, in request order, each once. A hash lookup an item; the
// ones named are few, so a repeat is found among them.
std::string DrainJson(const std::vector<batcher::Heartbeat>& items,
                      const kvmirror::Snapshot* snapshot) {
  std::string out = "[";
  std::vector<std::string_view> named;
  if (snapshot != nullptr && !snapshot->drained_ids()->empty()) {
    for (const batcher::Heartbeat& item : items) {
      const std::string_view id = item.container_id;
      if (!snapshot->Drained(id) || std::find(named.begin(), named.end(), id) != named.end()) {
        continue;
      }
      if (!named.empty()) out.push_back(',');
      named.push_back(id);
      base::AppendJsonString(id, &out);
    }
  }
  out.push_back(']');
  return out;
}

// `sent`: the items of the request, some of them folded before Submit.
// `unknown` names the ids the batcher knows have no container (SubmitResult).
Response SubmitResponse(const batcher::SubmitResult& r, size_t sent,
                        const std::string& drain_json) {
  if (r.code != batcher::SubmitResult::Code::kAccepted) {
    return RefusalResponse(SubmitRefusal(r.code));
  }
  std::string body =
      "{\"accepted\":" + std::to_string(sent) + ",\"drain\":" + drain_json + ",\"unknown\":[";
  for (size_t i = 0; i < r.unknown_ids.size(); ++i) {
    if (i > 0) body.push_back(',');
    base::AppendJsonString(r.unknown_ids[i], &body);
  }
  body += "]}";
  return JsonResponse(202, std::move(body));
}

}  // namespace

HeartbeatRoutes::HeartbeatRoutes(batcher::Batcher* batcher, const std::atomic<bool>* ready,
                                 HeartbeatRoutesOptions options)
    : batcher_(batcher), ready_(ready), options_(std::move(options)) {}

void HeartbeatRoutes::AddRoutes(Router* router) {
  // A key past its budget is refused on its headers: its body is never read.
  RouteOptions options;
  if (HeartbeatKeyBudget* budget = options_.budget) {
    options.before_body = [budget](const Principal& who) -> std::optional<Response> {
      int64_t retry_after_s = 0;
      if (budget->Admit(who.key_id, HeartbeatKeyBudget::Clock::now(), &retry_after_s)) {
        return std::nullopt;
      }
      return HeartbeatBudgetResponse(budget->rate(), retry_after_s);
    };
  }
  router->Add(http::verb::post, "/v1/heartbeats", Access::kContainer,
              std::bind_front(&HeartbeatRoutes::Post, this), std::move(options));
}

std::optional<Response> HeartbeatRoutes::Read(const RouteRequest& req,
                                              std::vector<batcher::Heartbeat>* items,
                                              size_t* sent) {
  BodyError error;
  const int64_t offset_ms =
      options_.storage != nullptr ? store::EngineClockOffsetMs(*options_.storage) : 0;
  const bool parsed = ParseHeartbeats(req.http.body(), base::NowMs(), items, &error,
                                      options_.max_clock_skew_ms, offset_ms, sent);
  // What the body carried is spent, refused or not (at least one item).
  if (options_.budget != nullptr) {
    options_.budget->Charge(req.who.key_id, std::max<size_t>(1, *sent),
                            HeartbeatKeyBudget::Clock::now());
  }
  if (!parsed) return BodyErrorResponse(error);
  // A scoped container key reports its own containers only; one id outside
  // refuses the whole request, so that nothing of it is taken.
  for (size_t i = 0; i < items->size(); ++i) {
    if (!req.who.MayReport((*items)[i].container_id)) {
      return ErrorResponse(ApiError::kForbidden,
                           "heartbeats[" + std::to_string(i) +
                               "].container_id: this key may not report this container; "
                               "nothing of this request was taken");
    }
  }
  // One container's reports become one before they are queued, as the
  // batcher would fold them: a request naming it 10,000 times costs a queue
  // slot, not 10,000.
  const size_t folded = batcher::CoalesceReports(items);
  if (options_.budget != nullptr) {
    options_.budget->folded.fetch_add(folded, std::memory_order_relaxed);
  }
  const size_t cap = ReportsCapOf(req.who);
  if (items->size() > cap) {
    if (options_.budget != nullptr) {
      options_.budget->refused_items.fetch_add(1, std::memory_order_relaxed);
    }
    return ErrorResponse(ApiError::kInvalidField,
                         "heartbeats: this key reports one container (" + req.who.report_ids +
                             "): at most " + std::to_string(cap) +
                             " report a request once one container's reports without a state "
                             "are folded; nothing of this request was taken");
  }
  return std::nullopt;
}

void HeartbeatRoutes::Post(RouteRequest req, Reply reply) {
  // Not ready is starting or stopping: a heartbeat taken now might not be
  // written before exit, so the container is told to send it elsewhere or
  // again. The batcher says kStopping for the same reason a moment later.
  if (!ready_->load()) {
    return reply(RefusalResponse(kServerNotReady));
  }
  // A node cut off from its database would take heartbeats it cannot write
  // while the other nodes' sweeps mark those containers dead and end their
  // sessions: refused, so that the agent sends them to a node that can.
  if (options_.storage != nullptr && store::AnyWriterFailing(*options_.storage)) {
    return reply(RefusalResponse(kNodeCutOff));
  }
  // Liveness is judged by the server's clock at accept (docs/api.md), taken once
  // for the whole request; ts_ms is bounded on the engine's clock (on
  // PostgreSQL the database's: this node's may be off).
  std::vector<batcher::Heartbeat> items;
  size_t sent = 0;
  if (std::optional<Response> refused = Read(req, &items, &sent)) {
    return reply(std::move(*refused));
  }
  // Told from the mirror before the items go to the batcher: the reply comes
  // before the write, so it cannot come from it.
  std::string drain_json = DrainJson(
      items, options_.mirror != nullptr ? options_.mirror->Current().get() : nullptr);
  if (options_.readers != nullptr) {
    // Submit may read the database (each item's partition): off the io
    // thread, as every other storage read of the routes.
    auto shared = std::make_shared<std::vector<batcher::Heartbeat>>(std::move(items));
    batcher::Batcher* batcher = batcher_;
    return ReadOffIo(
        options_.readers, KeyHeartbeats(req.who.key_id), options_.io, reply,
        [batcher, shared] { return batcher->Submit(std::move(*shared)); },
        [sent, drain_json = std::move(drain_json)](const batcher::SubmitResult& r) {
          return SubmitResponse(r, sent, drain_json);
        });
  }
  reply(SubmitResponse(batcher_->Submit(std::move(items)), sent, drain_json));
}

}  // namespace server
