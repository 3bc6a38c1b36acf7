#ifndef EDGEALLOC_SERVER_HTTP_SERVER_H_
#define EDGEALLOC_SERVER_HTTP_SERVER_H_

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "server/http_types.h"
#include "store/status.h"

namespace server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port; see HttpServer::port()
  int threads = 1;
  int64_t max_body_bytes = 1 << 20;
  // Open connections at most; 0: from RLIMIT_NOFILE (see HttpServer).
  int max_connections = 0;
};

// An HttpServer is an async HTTP/1.1 server in the shape of Beast's
// example/advanced/server: a listener and one Connection object per client,
// keep-alive, one request in flight per connection, every read under a
// timeout. `threads` io threads run one io_context; each connection lives on
// its own strand. The handler is called on an io thread and answers through
// its Reply from any thread. Start, StopAccepting, WaitIdle and Stop are for
// the owning thread.
class HttpServer {
 public:
  // Connections beyond this get a 503 and are closed.
  static constexpr int kMaxConnections = 10000;
  // Request line and headers at most; more is 431 headers_too_large.
  static constexpr size_t kHeaderLimitBytes = 8 * 1024;
  // A keep-alive connection idle this long, or a client this slow to send
  // its headers or body, is closed, so slow clients cannot hold the server.
  static constexpr std::chrono::seconds kReadTimeout{30};
  static constexpr std::chrono::seconds kWriteTimeout{30};
  // After refusing a request (413, 431, 400) with Connection: close, the rest
  // of what the client sends is read and dropped for at most this long and
  // this much, so that it reads our answer instead of a reset.
  static constexpr std::chrono::seconds kDrainTimeout{5};
  static constexpr size_t kMaxDrainBytes = 64 << 20;

  HttpServer(HttpServerOptions options, Handler handler);
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

  int open_connections() const;
  int in_flight() const;
  // Idle connections closed so far to make room for new ones.
  int64_t shed_connections() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_SERVER_H_
