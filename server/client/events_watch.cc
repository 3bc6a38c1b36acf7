#include "server/client/events_watch.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <ostream>
#include <thread>

#include "server/client/http_client.h"

namespace server {
namespace {

// The long poll's wait, and the client's bound on one request beyond it.
constexpr int64_t kWaitMs = 25000;
constexpr int64_t kSlackMs = 10000;

std::string EventsTarget(const std::string& after, const std::string& type) {
  std::string target = "/v1/events?limit=1000&wait_ms=" + std::to_string(kWaitMs);
  if (!after.empty()) target += "&after=" + PathSegment(after);
  if (!type.empty()) target += "&type=" + PathSegment(type);
  return target;
}

// The cursor after `event`, or after `page`: a number, or a sharded
// store's string.
std::string CursorText(const nlohmann::json& cursor) {
  return cursor.is_string() ? cursor.get<std::string>() : cursor.dump();
}

}  // namespace

int RunEventsWatch(const ClientOptions& options, const EventsWatch& watch, std::ostream& out,
                   std::ostream& err) {
  HttpUrl url;
  if (!ServerUrlOf(options, &url, err)) return 2;
  std::string after = watch.after;
  int64_t printed = 0;
  for (;;) {
    HttpCall call;
    call.target = EventsTarget(after, watch.type);
    call.bearer_key = options.key;
    call.timeout_ms = kWaitMs + kSlackMs;
    const HttpReply reply = SendHttp(url, call);
    if (reply.answered() && reply.status >= 400 && reply.status < 500) {
      err << reply.body << "\n";
      return ExitCodeOf(reply.status);
    }
    nlohmann::json page;
    if (reply.status == 200) page = nlohmann::json::parse(reply.body, nullptr, false);
    if (!page.is_object() || !page.contains("events") || !page.contains("next")) {
      // No answer, a 5xx or a cut body: again from the same cursor.
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    for (const nlohmann::json& event : page["events"]) {
      out << event.dump() << "\n" << std::flush;
      after = CursorText(event.contains("cursor") ? event["cursor"] : event["seq"]);
      if (watch.max_events > 0 && ++printed >= watch.max_events) return 0;
    }
    after = CursorText(page["next"]);
  }
}

}  // namespace server
