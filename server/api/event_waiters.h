#ifndef EDGEALLOC_SERVER_API_EVENT_WAITERS_H_
#define EDGEALLOC_SERVER_API_EVENT_WAITERS_H_

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "server/http/message.h"
#include "store/storage.h"

namespace server {

// The readers of GET /v1/events (wait_ms) and /v1/events/stream whose first
// read found nothing: they wait here, on one thread of its own, for a commit
// of the storage (its CommitSignal: woken by the commit, never by a timer),
// and each is read again after every commit until it finds events, its
// time is up (answered with the empty page) or its client went away.
// Bounded as waiting claims are: at most `max_total` wait at once, and a
// tenant at most `max_per_tenant` (503 overloaded past either), and after
// a commit the tenants are read in turns, one waiter of each a turn, so a
// tenant with many waiters delays no other's answer by more than one read.
// Safe from any thread.
class EventWaiters {
 public:
  struct Waiter {
    std::string tenant;  // whose turn it takes
    store::EventQuery query;
    store::EventCursor after;
    std::chrono::steady_clock::time_point deadline;
    ClientGone gone;  // may be empty
    // Answers the page read (events found, or the wait's end) and the
    // cursor it was read after, on this thread; a failed read is answered
    // through `failed`.
    std::function<void(const store::EventPage&, const store::EventCursor&)> answer;
    std::function<void(const store::Status&)> failed;
  };

  EventWaiters(store::Storage* storage, size_t max_total, size_t max_per_tenant);
  EventWaiters(const EventWaiters&) = delete;
  EventWaiters& operator=(const EventWaiters&) = delete;
  ~EventWaiters();  // Stop()

  // Queues `w`; false (it is not called) when a bound is reached or
  // stopping.
  bool Wait(Waiter w);
  // Answers every waiter with what it can read now, and takes no more.
  void Stop();
  size_t waiting() const;

 private:
  void Loop();
  // One pass: each waiter read once, tenants in turns; the finished ones
  // answered and dropped. True if a waiter's page found none of its events
  // but moved its cursor (the next pass then comes at once, not at a commit).
  bool Pass(bool stopping);
  // Reads for `w`; true if it is answered (events, time up, gone, error).
  // *moved: unanswered, its cursor moved past rows that were not its own.
  bool Serve(Waiter& w, bool stopping, bool* moved);

  store::Storage* const storage_;
  const size_t max_total_;
  const size_t max_per_tenant_;
  mutable std::mutex mu_;
  std::map<std::string, std::deque<Waiter>> by_tenant_;  // guarded by mu_
  size_t total_ = 0;                                     // guarded by mu_
  bool stopping_ = false;                                // guarded by mu_
  std::thread thread_;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_EVENT_WAITERS_H_
