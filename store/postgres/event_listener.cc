#include "store/postgres/event_listener.h"

#include <libpq-fe.h>
#include <poll.h>

#include <chrono>
#include <utility>

#include "store/postgres/events_sql.h"

namespace store {
namespace {

// How long one wait for the socket lasts: the bound on noticing a stop.
constexpr int kPollMs = 200;
constexpr auto kReconnectPause = std::chrono::milliseconds(500);

}  // namespace

PgEventListener::PgEventListener(std::string uri, std::string name, CommitSignal* signal)
    : uri_(std::move(uri)), name_(std::move(name)), signal_(signal) {
  thread_ = std::thread([this] { Loop(); });
}

PgEventListener::~PgEventListener() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void PgEventListener::Loop() {
  while (!stop_.load()) {
    ListenOnce();
    const auto until = std::chrono::steady_clock::now() + kReconnectPause;
    while (!stop_.load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs / 4));
    }
  }
}

void PgEventListener::ListenOnce() {
  const char* keys[] = {"dbname", "application_name", "connect_timeout", nullptr};
  const char* values[] = {uri_.c_str(), name_.c_str(), "5", nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn == nullptr) return;
  if (PQstatus(conn) != CONNECTION_OK) {
    PQfinish(conn);
    return;
  }
  PGresult* r = PQexec(conn, "LISTEN " EDGEALLOC_PG_EVENTS_CHANNEL);
  const bool listening = PQresultStatus(r) == PGRES_COMMAND_OK;
  PQclear(r);
  if (listening) signal_->Notify();  // what was committed while away
  while (listening && !stop_.load()) {
    pollfd fd{PQsocket(conn), POLLIN, 0};
    if (fd.fd < 0 || poll(&fd, 1, kPollMs) < 0) break;
    if (PQconsumeInput(conn) == 0) break;
    bool any = false;
    while (PGnotify* n = PQnotifies(conn)) {
      any = true;
      PQfreemem(n);
    }
    if (any) signal_->Notify();
  }
  PQfinish(conn);
}

}  // namespace store
