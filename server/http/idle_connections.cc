#include "server/http/idle_connections.h"

#include <utility>

namespace server {

IdleConnections::Ticket IdleConnections::Enter(std::weak_ptr<Connection> connection) {
  base::MutexLock lock(&mu_);
  const Ticket ticket = next_++;
  waiting_.emplace(ticket, std::move(connection));
  return ticket;
}

bool IdleConnections::Leave(Ticket ticket) {
  base::MutexLock lock(&mu_);
  return waiting_.erase(ticket) == 1;
}

std::shared_ptr<Connection> IdleConnections::TakeOldest() {
  base::MutexLock lock(&mu_);
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    std::shared_ptr<Connection> victim = it->second.lock();
    if (!victim) continue;
    waiting_.erase(it);
    return victim;
  }
  return nullptr;
}

int IdleConnections::size() const {
  base::MutexLock lock(&mu_);
  int n = 0;
  for (const auto& entry : waiting_) n += entry.second.expired() ? 0 : 1;
  return n;
}

}  // namespace server
