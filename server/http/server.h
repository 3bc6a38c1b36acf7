#ifndef EDGEALLOC_SERVER_HTTP_SERVER_H_
#define EDGEALLOC_SERVER_HTTP_SERVER_H_

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/http/limits.h"
#include "server/http/message.h"
#include "store/status.h"

namespace server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port; see HttpServer::port()
  int threads = 1;
  int64_t max_body_bytes = 1 << 20;
  // Open connections at most; 0: the descriptors RLIMIT_NOFILE allows
  // (raised to its hard limit at Start) less kReservedDescriptors, at most
  // kMaxConnections.
  int max_connections = 0;
  // A request whose handler has not answered this long after it was read
  // (plus what the handler added through its ExtendDeadline) is answered
  // 503 unavailable with Retry-After: its answer was lost (a store callback
  // that never ran, a wedged writer). The handler's late answer is dropped.
  // Zero: no deadline.
  std::chrono::milliseconds request_deadline{30000};
};

// An HttpServer is an async HTTP/1.1 server in the shape of Beast's
// example/advanced/server: a listener and one Connection object per client
// (connection.h), keep-alive, one request in flight per connection, every
// read under a timeout. `threads` io threads run one io_context; each
// connection lives on its own strand. A request's handler, the one its
// admission names, is called on an io thread
// and answers through its Reply from any thread, and may watch for its
// client's going away through its ClientGoneWatch. A handler that does not
// answer by the request's deadline (HttpServerOptions::request_deadline) has
// it answered 503 for it. Start, StopAccepting, WaitIdle and Stop are for
// the owning thread.
//
// Framing (RFC 9112 §6): a Transfer-Encoding whose last coding is not
// chunked, that names chunked twice, or that comes with a Content-Length is
// 400 bad_request; one with any other coding is 501 not_implemented. Either
// closes the connection, and nothing the client sent after it is answered.
// So does a missing Host (HTTP/1.1), more than one Host field, or one that
// is not a host and port (RFC 9112 §3.2): 400 bad_request.
// A HEAD is answered with the headers of its response and no body.
//
// Connections: at the cap (HttpServerOptions::max_connections), a new
// connection closes the one idle longest (waiting for a request) to take its
// place; with none idle, it gets 503 overloaded with Retry-After and is
// closed. Out of descriptors (EMFILE, ENFILE), accepting backs off, sheds
// the oldest idle connection, and says so once per kAcceptErrorLogInterval.
class HttpServer {
 public:
  // The connection cap at most, whatever RLIMIT_NOFILE allows.
  static constexpr int kMaxConnections = 10000;
  // Descriptors kept out of the connection cap for everything else the
  // process opens: the database files of each shard (file, -wal, -shm) for
  // the writer, the pooled readers and the mirror, the write-lock and
  // register-lock files, the listening socket, epoll/eventfd/timerfd of
  // Asio, stdio, and a socket accepted past the cap to answer its 503.
  static constexpr int kReservedDescriptors = 64;
  // The cap is at least this, however low RLIMIT_NOFILE is.
  static constexpr int kMinConnections = 8;
  // Accept errors are logged at most once per this interval, with a count.
  static constexpr std::chrono::seconds kAcceptErrorLogInterval =
      ConnectionLimits::kWarningInterval;
  // After an accept error, accepting waits this long before trying again.
  static constexpr std::chrono::milliseconds kAcceptRetryDelay{20};
  // The limits of every connection (limits.h says what each is).
  static constexpr size_t kHeaderLimitBytes = ConnectionLimits::kHeaderLimitBytes;
  static constexpr std::chrono::seconds kReadTimeout = ConnectionLimits::kReadTimeout;
  static constexpr std::chrono::seconds kWriteTimeout = ConnectionLimits::kWriteTimeout;
  static constexpr std::chrono::seconds kDrainTimeout = ConnectionLimits::kDrainTimeout;
  static constexpr size_t kMaxDrainBytes = ConnectionLimits::kMaxDrainBytes;

  // `admitter` (the Router) is asked on an io thread about every request
  // once its header is read, before any of its body (and before the 100 of
  // `Expect: 100-continue`): a refusal (401, 404, 429, ...) is answered at
  // once and the body never read (a request that has one is answered with
  // Connection: close, what it sends after drained); else the body is read,
  // up to the admission's max_body_bytes, and handed with the header to its
  // handler. It must outlive the server.
  HttpServer(HttpServerOptions options, const Admitter* admitter);
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  // Stops if still running. Must outlive every Reply still held elsewhere
  // (stop the store writers first).
  ~HttpServer();

  // Binds, listens and starts the io threads. IOError if the address cannot
  // be resolved or bound.
  store::Status Start();
  // The bound port (useful with port 0). REQUIRES: Start returned Ok.
  uint16_t port() const;
  // An executor of the io threads, for work that must leave a writer thread.
  boost::asio::any_io_executor executor();

  // Closes the listening socket; open connections go on, and close after
  // their next response.
  void StopAccepting();
  // Waits until no request is being handled, at most `timeout`. True if idle.
  bool WaitIdle(std::chrono::milliseconds timeout);
  // Stops the io threads and joins them. Idempotent.
  void Stop();

  // The connection cap in force. REQUIRES: Start returned Ok.
  int max_connections() const;
  int open_connections() const;
  int in_flight() const;
  // Keep-alive connections waiting for their next request, the oldest of
  // which is shed first at the cap.
  int idle_connections() const;
  // Idle connections closed so far to make room for new ones.
  int64_t shed_connections() const;
  // Requests answered 503 so far because their handler had not answered by
  // their deadline. Any thread.
  uint64_t deadlines_passed() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_SERVER_H_
