#include "server/api/event_routes.h"

#include <charconv>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "server/api/errors.h"
#include "server/api/event_bodies.h"
#include "server/api/reply_on_io.h"
#include "server/api/session_routes.h"

namespace server {
namespace {

bool WholeNumber(const std::string& text, int64_t lo, int64_t hi, int64_t* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && *out >= lo && *out <= hi;
}

// Past EventWaiters' bounds: as a waiting claim past its bounds.
constexpr Refusal kTooManyEventWaiters{
    ApiError::kOverloaded, "too many readers wait for events on this node; retry"};

Response BadParam(const std::string& name, const std::string& what) {
  return ErrorResponse(ApiError::kInvalidField, name + ": " + what);
}

}  // namespace

// What one request reads: its query and where it starts, and how it answers.
struct EventRoutes::Read {
  store::EventQuery query;
  store::EventCursor after;
  int64_t wait_ms = 0;
  bool stream = false;
  std::string tenant;  // whose reads and whose turn ("" for an admin: all)
};

EventRoutes::EventRoutes(store::Storage* storage, boost::asio::any_io_executor io,
                         ReaderPool* readers, size_t max_waiting, size_t max_waiting_per_tenant)
    : storage_(storage),
      io_(std::move(io)),
      readers_(readers),
      waiters_(storage, max_waiting, max_waiting_per_tenant) {}

void EventRoutes::AddRoutes(Router* router) {
  using http::verb;
  const auto bind = [this](auto fn) { return std::bind_front(fn, this); };
  router->Add(verb::get, "/v1/events", Access::kTenant, bind(&EventRoutes::Events));
  router->Add(verb::get, "/v1/events/stream", Access::kTenant, bind(&EventRoutes::Stream));
}

// The query's parameters into *read; a refusal, or nullopt.
static std::optional<Response> ParseEventQuery(const RouteRequest& req, int streams,
                                               EventRoutes::Read* read);

void EventRoutes::Events(RouteRequest req, Reply reply) {
  auto read = std::make_shared<Read>();
  if (auto refused = ParseEventQuery(req, storage_->event_streams(), read.get())) {
    return reply(std::move(*refused));
  }
  Start(std::move(read), req, std::move(reply));
}

void EventRoutes::Stream(RouteRequest req, Reply reply) {
  auto read = std::make_shared<Read>();
  if (auto refused = ParseEventQuery(req, storage_->event_streams(), read.get())) {
    return reply(std::move(*refused));
  }
  read->stream = true;
  std::string given;
  if (!req.QueryParam("wait_ms", &given)) read->wait_ms = kStreamWaitMs;
  Start(std::move(read), req, std::move(reply));
}

static std::optional<Response> ParseEventQuery(const RouteRequest& req, int streams,
                                               EventRoutes::Read* read) {
  const store::Caller caller = CallerOf(req.who);
  if (!caller.admin) read->query.tenant = caller.tenant;
  read->tenant = caller.admin ? "" : caller.tenant;
  std::string text;
  int64_t n = 0;
  read->query.limit = kDefaultEventPage;
  if (req.QueryParam("limit", &text)) {
    if (!WholeNumber(text, 1, kMaxEventPage, &n)) {
      return BadParam("limit", "must be an integer from 1 to " + std::to_string(kMaxEventPage));
    }
    read->query.limit = static_cast<int>(n);
  }
  if (req.QueryParam("type", &text)) {
    if (!store::IsEventType(text)) return BadParam("type", "is not an event type");
    read->query.type = text;
  }
  if (req.QueryParam("wait_ms", &text)) {
    if (!WholeNumber(text, 0, kMaxEventWaitMs, &n)) {
      return BadParam("wait_ms",
                      "must be an integer from 0 to " + std::to_string(kMaxEventWaitMs));
    }
    read->wait_ms = n;
  }
  std::string after;
  req.QueryParam("after", &after);
  const auto last_id = req.http.find("Last-Event-ID");
  if (last_id != req.http.end()) after = std::string(last_id->value());
  if (!store::EventCursor::Parse(after, streams, &read->after)) {
    return BadParam("after", streams == 1 ? "must be a seq (a whole number)"
                                          : "must be a cursor of " + std::to_string(streams) +
                                                " dot-separated seqs, or 0");
  }
  return std::nullopt;
}

void EventRoutes::Start(std::shared_ptr<Read> read, RouteRequest& req, Reply reply) {
  if (read->wait_ms > 0) req.AllowWait(std::chrono::milliseconds(read->wait_ms));
  const ClientGone gone = read->wait_ms > 0 ? req.WatchClientGone() : ClientGone();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(read->wait_ms);
  const std::string request_id = req.RequestId();
  auto respond = [read, request_id](const store::Status& s, const store::EventPage& page,
                                    const store::EventCursor& after, int streams) {
    if (!s.ok()) return StatusResponse(s, request_id);
    if (page.expired) return EventsExpiredResponse(page);
    if (read->stream) return EventStreamResponse(page, after);
    return EventPageResponse(page, streams);
  };
  const int streams = storage_->event_streams();
  const std::string owner = TenantReads(read->tenant);
  auto job = [this, read, reply, gone, deadline, respond, streams](bool run) {
    if (!run) return reply(ReaderRefusedResponse(ReaderPool::Posted::kStopping));
    store::EventPage page;
    const store::Status s = storage_->ReadEvents(read->query, read->after, &page);
    if (!s.ok() || page.expired || !page.events.empty() || read->wait_ms == 0) {
      return reply(respond(s, page, read->after, streams));
    }
    EventWaiters::Waiter w;
    w.tenant = read->tenant;
    w.query = read->query;
    w.after = page.next;
    w.deadline = deadline;
    w.gone = gone;
    w.answer = [reply, respond, streams](const store::EventPage& p,
                                         const store::EventCursor& after) {
      reply(respond(store::Status::Ok(), p, after, streams));
    };
    w.failed = [reply, respond, streams](const store::Status& failed) {
      reply(respond(failed, {}, {}, streams));
    };
    if (!waiters_.Wait(std::move(w))) reply(RefusalResponse(kTooManyEventWaiters));
  };
  const ReaderPool::Posted posted = readers_->TryPost(std::move(job), owner);
  if (posted != ReaderPool::Posted::kQueued) reply(ReaderRefusedResponse(posted, owner));
}

}  // namespace server
