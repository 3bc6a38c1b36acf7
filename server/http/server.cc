#include "server/http/server.h"

#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>
#include <thread>

#include "server/http/connection.h"
#include "server/http/log.h"
#include "server/http/server_impl.h"

// The listening side of HttpServer: accept, the connection cap, shedding idle
// connections, backing off accept errors; and starting and stopping the io
// threads. One connection's reads and writes are in connection.cc.

namespace server {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// Raises the soft RLIMIT_NOFILE to the hard limit (bounded, so that an
// unlimited hard limit does not ask for more than the connection cap needs).
// Returns the soft limit in force afterwards, or -1 if it cannot be read.
int64_t RaiseDescriptorLimit() {
  struct rlimit lim;
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return -1;
  const rlim_t wanted = HttpServer::kMaxConnections + HttpServer::kReservedDescriptors;
  rlim_t target = lim.rlim_max == RLIM_INFINITY ? wanted : std::min(lim.rlim_max, wanted);
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < target) {
    struct rlimit raised = lim;
    raised.rlim_cur = target;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  return lim.rlim_cur == RLIM_INFINITY ? static_cast<int64_t>(wanted)
                                       : static_cast<int64_t>(lim.rlim_cur);
}

}  // namespace

void HttpServer::Impl::DoAccept() {
  acceptor.async_accept(net::make_strand(ioc),
                        beast::bind_front_handler(&Impl::OnAccept, this));
}

bool HttpServer::Impl::ShedOldestIdle() {
  std::shared_ptr<Connection> victim;
  {
    base::MutexLock lock(&idle_mu);
    // An entry whose Connection is being destroyed is left to its destructor.
    for (auto it = idle.begin(); it != idle.end(); ++it) {
      victim = it->lock();
      if (!victim) continue;
      victim->server_->idle_mu.AssertHeld();  // it is idle_mu: victim->server_ is this
      victim->idle_ = false;
      victim->shed_ = true;
      idle.erase(it);  // and stop: `it` is gone
      break;
    }
  }
  if (!victim) return false;
  shed.fetch_add(1);
  net::post(victim->stream_.get_executor(), [victim] { victim->Shed(); });
  return true;
}

void HttpServer::Impl::OnAccept(beast::error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
  if (ec) {
    // Out of file descriptors and the like: free one by shedding the
    // connection idle longest, back off instead of spinning, and say so
    // once an interval, not once an accept.
    const bool out_of_fds = ec == net::error::no_descriptors || ec.value() == ENFILE;
    const bool shed_one = out_of_fds && ShedOldestIdle();
    ++accept_errors_unlogged;
    const auto now = std::chrono::steady_clock::now();
    if (!accept_error_logged_at || now - *accept_error_logged_at >= kAcceptErrorLogInterval) {
      LogWarn("edgealloc: accept failed: " + ec.message() + " (" +
              std::to_string(accept_errors_unlogged) + " time(s) since last said; " +
              std::to_string(connections.load()) + " connections open, cap " +
              std::to_string(max_connections) + (shed_one ? "; shedding idle ones)" : ")"));
      accept_error_logged_at = now;
      accept_errors_unlogged = 0;
    }
    retry_timer.expires_after(HttpServer::kAcceptRetryDelay);
    retry_timer.async_wait([this](beast::error_code ec) {
      if (!ec && acceptor.is_open()) DoAccept();
    });
    return;
  }
  // At the cap, the connection idle longest makes room (the count is over
  // by one until it is gone); with none idle, the new one is refused.
  bool counted = connections.fetch_add(1) < max_connections || ShedOldestIdle();
  if (!counted) connections.fetch_sub(1);
  std::make_shared<Connection>(std::move(socket), this, counted)->Run();
  DoAccept();
}

HttpServer::HttpServer(HttpServerOptions options, Handler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() { Stop(); }

store::Status HttpServer::Start() {
  Impl& s = *impl_;
  beast::error_code ec;
  tcp::resolver resolver(s.ioc);
  auto results = resolver.resolve(s.options.host, std::to_string(s.options.port),
                                  tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    return store::Status::IOError("cannot resolve " + s.options.host + ": " + ec.message());
  }
  tcp::endpoint endpoint = results.begin()->endpoint();
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return store::Status::IOError("cannot listen on " + s.options.host + ":" +
                                  std::to_string(s.options.port) + ": " + ec.message());
  }
  s.port = s.acceptor.local_endpoint().port();
  s.max_connections = s.options.max_connections;
  if (s.max_connections <= 0) {
    const int64_t nofile = RaiseDescriptorLimit();
    s.max_connections = kMaxConnections;
    if (nofile >= 0 && nofile - kReservedDescriptors < kMaxConnections) {
      s.max_connections =
          static_cast<int>(std::max<int64_t>(kMinConnections, nofile - kReservedDescriptors));
      LogLine("edgealloc: at most " + std::to_string(s.max_connections) +
              " connections (RLIMIT_NOFILE " + std::to_string(nofile) + " less " +
              std::to_string(kReservedDescriptors) + " reserved)");
    }
  }
  s.DoAccept();
  s.started = true;
  int n = s.options.threads < 1 ? 1 : s.options.threads;
  for (int i = 0; i < n; ++i) {
    s.threads.emplace_back([impl = impl_.get()] {
      for (;;) {
        try {
          impl->ioc.run();
          return;
        } catch (const std::exception& e) {
          LogError(std::string("edgealloc: io thread caught: ") + e.what());
        }
      }
    });
  }
  return store::Status::Ok();
}

uint16_t HttpServer::port() const { return impl_->port; }

boost::asio::any_io_executor HttpServer::executor() { return impl_->ioc.get_executor(); }

void HttpServer::StopAccepting() {
  impl_->stopping.store(true);
  Impl* impl = impl_.get();
  net::post(impl->acceptor.get_executor(), [impl] {
    beast::error_code ignored;
    impl->acceptor.close(ignored);
    impl->retry_timer.cancel();
  });
}

bool HttpServer::WaitIdle(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (impl_->in_flight.load() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

void HttpServer::Stop() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  s.stopping.store(true);
  s.ioc.stop();
  for (auto& t : s.threads) t.join();
  s.threads.clear();
}

int HttpServer::open_connections() const { return impl_->connections.load(); }
int HttpServer::in_flight() const { return impl_->in_flight.load(); }
int64_t HttpServer::shed_connections() const { return impl_->shed.load(); }
int HttpServer::idle_connections() const {
  base::MutexLock lock(&impl_->idle_mu);
  int n = 0;
  for (const auto& weak : impl_->idle) n += weak.expired() ? 0 : 1;
  return n;
}
int HttpServer::max_connections() const { return impl_->max_connections; }

}  // namespace server
