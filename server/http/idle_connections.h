#ifndef EDGEALLOC_SERVER_HTTP_IDLE_CONNECTIONS_H_
#define EDGEALLOC_SERVER_HTTP_IDLE_CONNECTIONS_H_

// Internal to server/http/.

#include <cstdint>
#include <map>
#include <memory>

#include "base/mutex.h"

namespace server {

class Connection;

// The keep-alive connections waiting for their next request, longest waiting
// first: at the connection cap the server sheds the oldest to make room.
// Thread-safe: each connection enters and leaves from its own strand, the
// acceptor takes the oldest from its own.
class IdleConnections {
 public:
  // A connection's place in the list, from Enter to Leave.
  using Ticket = uint64_t;

  // Adds `connection`, waiting from now.
  Ticket Enter(std::weak_ptr<Connection> connection);
  // Takes the ticket's connection out again. False if TakeOldest took it
  // meanwhile (it is being shed).
  bool Leave(Ticket ticket);
  // Takes out the connection idle longest, for the caller to close; null if
  // none is. An entry whose connection is being destroyed is left to its
  // destructor's Leave.
  std::shared_ptr<Connection> TakeOldest();
  // Idle connections not being destroyed.
  int size() const;

 private:
  mutable base::Mutex mu_;
  Ticket next_ GUARDED_BY(mu_) = 0;
  // By ticket, so the oldest first.
  std::map<Ticket, std::weak_ptr<Connection>> waiting_ GUARDED_BY(mu_);
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_IDLE_CONNECTIONS_H_
