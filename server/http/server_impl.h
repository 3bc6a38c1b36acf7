#ifndef EDGEALLOC_SERVER_HTTP_SERVER_IMPL_H_
#define EDGEALLOC_SERVER_HTTP_SERVER_IMPL_H_

// Internal to server/http/: the state an HttpServer shares with its
// Connections. Nothing outside server/http/ includes this.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/error.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "server/http/server.h"

namespace server {

class Connection;

// Owned by the HttpServer. The acceptor's side (accept, the connection cap,
// shedding) is in server.cc; Connections update the counters and the idle
// list from their strands. Declared so that the io_context (and with it the
// pending handlers that still hold Connections) dies before the counters
// those Connections touch in their destructors.
struct HttpServer::Impl {
  Impl(HttpServerOptions o, Handler h)
      : options(std::move(o)), handler(std::move(h)), ioc(options.threads),
        acceptor(boost::asio::make_strand(ioc)), retry_timer(acceptor.get_executor()) {}

  void DoAccept();
  void OnAccept(boost::beast::error_code ec, boost::asio::ip::tcp::socket socket);
  // Closes the connection idle longest. False if none is idle. Any thread.
  bool ShedOldestIdle();

  HttpServerOptions options;
  Handler handler;
  std::atomic<int> connections{0};
  std::atomic<int> in_flight{0};
  std::atomic<bool> stopping{false};
  std::atomic<int64_t> shed{0};
  int max_connections = HttpServer::kMaxConnections;  // set by Start
  // Connections waiting for a request, longest waiting first. A Connection
  // enters on its strand when it starts reading a request and leaves when
  // the header is read, when it dies, or when shed (any strand).
  base::Mutex idle_mu;
  std::list<std::weak_ptr<Connection>> idle GUARDED_BY(idle_mu);
  // Accept errors not yet logged; the acceptor's strand only.
  int64_t accept_errors_unlogged = 0;
  std::optional<std::chrono::steady_clock::time_point> accept_error_logged_at;
  bool started = false;
  bool stopped = false;
  uint16_t port = 0;
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor acceptor;
  boost::asio::steady_timer retry_timer;  // backs off accept errors (EMFILE)
  std::vector<std::thread> threads;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_SERVER_IMPL_H_
