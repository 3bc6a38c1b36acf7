#include "server/api/event_bodies.h"

#include <utility>

namespace server {

std::string CursorJson(const store::EventCursor& cursor) {
  if (cursor.seqs.size() == 1) return std::to_string(cursor.seqs[0]);
  return JsonQuote(cursor.ToString());
}

std::string EventJson(const store::Event& e, const store::EventCursor* cursor) {
  std::string out = "{\"seq\":" + std::to_string(e.seq) + ",\"at_ms\":" + std::to_string(e.at_ms) +
                    ",\"type\":" + JsonQuote(e.type);
  if (cursor != nullptr) out += ",\"cursor\":" + JsonQuote(cursor->ToString());
  out += ",\"container_id\":" + JsonQuote(e.container_id);
  if (!e.session_id.empty()) out += ",\"session_id\":" + JsonQuote(e.session_id);
  if (!e.tenant.empty()) out += ",\"tenant\":" + JsonQuote(e.tenant);
  if (e.token) out += ",\"token\":" + std::to_string(*e.token);
  if (e.slot) out += ",\"slot\":" + std::to_string(*e.slot);
  out += ",\"region\":" + JsonQuote(e.region) + ",\"pool\":" + JsonQuote(e.pool);
  if (!e.end_reason.empty()) out += ",\"end_reason\":" + JsonQuote(e.end_reason);
  return out + "}";
}

namespace {

// Calls fn(event, cursor after it) for each event of `page`, read after
// `after`.
template <typename Fn>
void EachWithCursor(const store::EventPage& page, store::EventCursor after, Fn fn) {
  for (const store::Event& e : page.events) {
    after.seqs[static_cast<size_t>(e.stream)] = e.seq;
    fn(e, after);
  }
}

}  // namespace

Response EventPageResponse(const store::EventPage& page, int streams) {
  std::string body = "{\"events\":[";
  store::EventCursor start = page.next;
  // The cursor before the page: each stream's seq before its first event.
  for (auto it = page.events.rbegin(); it != page.events.rend(); ++it) {
    start.seqs[static_cast<size_t>(it->stream)] = it->seq - 1;
  }
  bool first = true;
  EachWithCursor(page, start, [&](const store::Event& e, const store::EventCursor& at) {
    if (!first) body += ',';
    first = false;
    body += EventJson(e, streams > 1 ? &at : nullptr);
  });
  body += "],\"next\":" + CursorJson(page.next) + "}";
  return JsonResponse(200, std::move(body));
}

Response EventsExpiredResponse(const store::EventPage& page) {
  std::string fields = ",\"resume_after\":" + CursorJson(page.oldest);
  if (page.oldest.seqs.size() == 1) {
    fields += ",\"oldest_seq\":" + std::to_string(page.oldest.seqs[0] + 1);
  }
  return ErrorResponse(ApiError::kEventsExpired,
                       "events after this cursor were pruned (--event-retention-ms); resume "
                       "after resume_after, or read from now",
                       fields);
}

Response EventStreamResponse(const store::EventPage& page, const store::EventCursor& after) {
  // Each answer ends; EventSource (and `edgealloc events watch`) connect
  // again at once with Last-Event-ID.
  std::string body = ": keep-alive\nretry: 100\n\n";
  EachWithCursor(page, after, [&](const store::Event& e, const store::EventCursor& at) {
    body += "id: " + at.ToString() + "\nevent: " + e.type + "\ndata: " + EventJson(e, nullptr) +
            "\n\n";
  });
  Response r(http::status::ok, 11);
  r.set(http::field::content_type, "text/event-stream");
  r.set(http::field::cache_control, "no-cache");
  r.body() = std::move(body);
  r.prepare_payload();
  return r;
}

}  // namespace server
