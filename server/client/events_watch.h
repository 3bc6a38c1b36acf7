#ifndef EDGEALLOC_SERVER_CLIENT_EVENTS_WATCH_H_
#define EDGEALLOC_SERVER_CLIENT_EVENTS_WATCH_H_

#include <cstdint>
#include <iosfwd>
#include <string>

#include "server/client/client_request.h"

namespace server {

// What `edgealloc events watch` follows.
struct EventsWatch {
  std::string after;    // the cursor to start after ("": the oldest kept)
  std::string type;     // one event type, or "" for all
  int64_t max_events = 0;  // stop after this many (0: never)
};

// Long-polls GET /v1/events from `watch.after`, printing each event as one
// line of JSON on `out` as it commits, and resuming after the last event
// printed: a dropped connection or a 5xx is retried (after a second) from
// there, so no event is printed twice or skipped. Returns when max_events
// were printed (0), or at a 4xx (ExitCodeOf it, the reply on `err`).
int RunEventsWatch(const ClientOptions& options, const EventsWatch& watch, std::ostream& out,
                   std::ostream& err);

}  // namespace server

#endif  // EDGEALLOC_SERVER_CLIENT_EVENTS_WATCH_H_
