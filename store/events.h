#ifndef EDGEALLOC_STORE_EVENTS_H_
#define EDGEALLOC_STORE_EVENTS_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The event log (docs/api.md, "Events"): every change of a session or a
// container writes one row of `events` in the transaction of the change
// (each engine's triggers: store/sqlite/events_sql.h,
// store/postgres/events_sql.h), so a change rolled back leaves none and
// none is written for a change that did not commit. A reader resumes after
// the last seq it saw.

namespace store {

// The event types, as the API names them.
inline constexpr const char* kEventTypes[] = {
    "session.claimed",     "session.renewed",     "session.ended",     "container.registered",
    "container.available", "container.draining",  "container.drained", "container.undrained",
    "container.dead",      "container.deleted"};
bool IsEventType(std::string_view type);

// One event as stored. Fields that do not concern its type are empty
// (container events carry no session, tenant, token nor slot).
struct Event {
  int64_t seq = 0;
  int stream = 0;  // which stream (EventCursor) it belongs to
  int64_t at_ms = 0;
  std::string type;
  std::string container_id;
  std::string session_id;
  std::string tenant;
  std::optional<int64_t> token;
  std::optional<int64_t> slot;
  std::string region;
  std::string pool;
  std::string end_reason;  // session.ended only
};

// Where a reader is: the last seq it saw of each stream. One stream on
// PostgreSQL and on one SQLite file, so a cursor is one seq; SQLite in
// shard files has one stream a shard (each file's seq grows in its own
// commit order, and no transaction spans two files), and its cursor is one
// seq a shard, written "a.b.c".
struct EventCursor {
  std::vector<int64_t> seqs;
  std::string ToString() const;
  // Parses `text` for `streams` streams: "" is the start (every seq 0); one
  // seq, or as many dot-separated as there are streams. False if malformed.
  static bool Parse(std::string_view text, int streams, EventCursor* out);
};

// What a reader asks for.
struct EventQuery {
  std::optional<std::string> tenant;  // a tenant's own sessions' events; unset: all (admin)
  std::string type;                   // one type, or "" for all
  int limit = 100;

  // Whether an event of `event_tenant` (none: a container's) and
  // `event_type` is one this reader reads. Both engines read a page's seq
  // range whole (at most EventExamineBound rows) and keep these: no index
  // by tenant for every event to write.
  bool Keeps(std::optional<std::string_view> event_tenant, std::string_view event_type) const {
    return (!tenant || event_tenant == *tenant) && (type.empty() || event_type == type);
  }
};

// A page of events after a cursor.
struct EventPage {
  std::vector<Event> events;  // in commit order (across shards: by at_ms, each shard in order)
  EventCursor next;           // after the last event read (or examined)
  // The cursor was past the retention in some stream: its events were
  // pruned. `oldest` is where to resume (the pruned end of every stream).
  bool expired = false;
  EventCursor oldest;

  // Whether this page, read after `after`, holds none of the reader's
  // events yet moved past rows that were not its own (a page examines a
  // bounded run of the log): read on from `next` at once, the log's end is
  // further on.
  bool SkippedAhead(const EventCursor& after) const {
    return events.empty() && !expired && next.seqs != after.seqs;
  }
};

// Wakes readers waiting for events: every writer commit of the storage
// bumps it (a commit may have written events; a reader that finds none
// waits again). Safe from any thread.
class CommitSignal {
 public:
  void Notify() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++commits_;
    }
    cv_.notify_all();
  }
  uint64_t commits() const {
    std::lock_guard<std::mutex> lock(mu_);
    return commits_;
  }
  // Waits until a commit after `seen` (commits() read before the read that
  // found nothing) or `deadline`. True if one came.
  bool WaitAfter(uint64_t seen, std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_until(lock, deadline, [&] { return commits_ != seen; });
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t commits_ = 0;
};

// The most rows one stream examines for a page (as ListExamineBound): a
// type filter that keeps few rows ends the page short, its cursor past them.
inline int64_t EventExamineBound(int limit) {
  const int64_t wanted = static_cast<int64_t>(limit) * 4;
  return wanted > 1000 ? wanted : 1000;
}

// Merges the pages of several streams (each in its stream's order) into
// `page`: by at_ms, each stream's events kept in order, at most `limit`;
// page->next is each stream's last event taken, or its examined end when
// all of its events were taken (`after`'s seq when it took none and some
// are left). `examined` is each stream's examined end.
void MergeEventStreams(std::vector<std::vector<Event>> streams, const EventCursor& after,
                       const std::vector<int64_t>& examined, int limit, EventPage* page);

}  // namespace store

#endif  // EDGEALLOC_STORE_EVENTS_H_
