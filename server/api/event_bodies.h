#ifndef EDGEALLOC_SERVER_API_EVENT_BODIES_H_
#define EDGEALLOC_SERVER_API_EVENT_BODIES_H_

#include <string>

#include "server/http/message.h"
#include "store/events.h"

namespace server {

// The most events one page carries, and its default.
inline constexpr int kMaxEventPage = 1000;
inline constexpr int kDefaultEventPage = 100;
// The longest a read of GET /v1/events waits (wait_ms), and how long one
// answer of GET /v1/events/stream waits for its first event.
inline constexpr int64_t kMaxEventWaitMs = 60000;
inline constexpr int64_t kStreamWaitMs = 25000;

// A cursor as the API writes it (`next`, an SSE id): a number on one
// stream, "a.b.c" on several (a JSON string then).
std::string CursorJson(const store::EventCursor& cursor);
// One event as JSON; `cursor`, when the events have several streams, is
// where a reader resumes after it (its `cursor` member).
std::string EventJson(const store::Event& e, const store::EventCursor* cursor);
// 200 {"events":[...],"next":...}.
Response EventPageResponse(const store::EventPage& page, int streams);
// 410 events_expired: the oldest seq kept and the cursor to resume after.
Response EventsExpiredResponse(const store::EventPage& page);
// 200 text/event-stream: a keep-alive comment, then each event as `id:`
// (the cursor after it), `event:` (its type) and `data:` (EventJson).
Response EventStreamResponse(const store::EventPage& page, const store::EventCursor& after);

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_EVENT_BODIES_H_
