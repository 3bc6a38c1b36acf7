#ifndef EDGEALLOC_SERVER_HTTP_CONNECTION_HOST_H_
#define EDGEALLOC_SERVER_HTTP_CONNECTION_HOST_H_

// Internal to server/http/.

#include <atomic>
#include <chrono>
#include <cstdint>

#include "server/http/idle_connections.h"
#include "server/http/message.h"

namespace server {

// All a Connection needs from the HttpServer that accepted it: its admitter
// and the request limits it was given, the counters the server reports, and
// the idle list it sheds from. Owned by the server, which outlives its
// connections; the connections update it from their strands.
struct ConnectionHost {
  const Admitter* admitter = nullptr;  // HttpServer's
  int64_t max_body_bytes = 0;
  // The connection cap in force, set before the io threads start.
  int max_connections = 0;
  // HttpServerOptions::request_deadline (zero: none).
  std::chrono::milliseconds request_deadline{0};
  // Requests answered 503 at their deadline, and those not yet logged.
  std::atomic<uint64_t> deadlines_passed{0};
  std::atomic<uint64_t> deadlines_unlogged{0};
  std::atomic<int> connections{0};  // open and within the cap
  std::atomic<int> in_flight{0};    // requests read and not yet answered
  std::atomic<bool> stopping{false};
  IdleConnections idle;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_CONNECTION_HOST_H_
