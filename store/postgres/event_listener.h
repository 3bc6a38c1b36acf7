#ifndef EDGEALLOC_STORE_POSTGRES_EVENT_LISTENER_H_
#define EDGEALLOC_STORE_POSTGRES_EVENT_LISTENER_H_

#include <atomic>
#include <string>
#include <thread>

#include "store/events.h"

namespace store {

// Wakes this node's waiting event readers when any node commits events: a
// connection of its own LISTENs on the channel the commit-order trigger
// notifies (store/postgres/events_sql.h) and bumps `signal` at each
// notification, and once at each (re)connect, since a notification sent
// while it was away is lost. Reconnects with a pause after a break.
class PgEventListener {
 public:
  PgEventListener(std::string uri, std::string name, CommitSignal* signal);
  PgEventListener(const PgEventListener&) = delete;
  PgEventListener& operator=(const PgEventListener&) = delete;
  ~PgEventListener();  // stops the thread

 private:
  void Loop();
  // One connection's life: connect, LISTEN, wait for notifications until it
  // breaks or the listener stops.
  void ListenOnce();

  const std::string uri_;
  const std::string name_;
  CommitSignal* const signal_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_EVENT_LISTENER_H_
