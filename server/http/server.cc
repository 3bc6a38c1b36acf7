#include "server/http/server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/http/connection.h"
#include "server/http/connection_host.h"
#include "server/http/log.h"

// The listening side of HttpServer: accept, the connection cap, shedding idle
// connections, backing off accept errors; and starting and stopping the io
// threads. One connection is connection.h.

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

// The acceptor's state, and the ConnectionHost its connections share.
// Declared so that the io_context (and with it the pending handlers that
// still hold Connections) dies before the host those Connections touch in
// their destructors.
struct HttpServer::Impl {
  Impl(HttpServerOptions o, const Admitter* admitter)
      : options(std::move(o)), ioc(options.threads), acceptor(net::make_strand(ioc)),
        retry_timer(acceptor.get_executor()) {
    host.admitter = admitter;
    host.max_body_bytes = options.max_body_bytes;
    host.request_deadline = options.request_deadline;
  }

  void DoAccept();
  void OnAccept(beast::error_code ec, tcp::socket socket);
  // Closes the connection idle longest. False if none is idle. Any thread.
  bool ShedOldestIdle();
  // Says once an interval, not once an accept, that accepting fails.
  void LogAcceptError(beast::error_code ec, bool shed_one);

  HttpServerOptions options;
  ConnectionHost host;
  std::atomic<int64_t> shed{0};
  // Accept errors not yet logged; the acceptor's strand only.
  int64_t accept_errors_unlogged = 0;
  std::optional<std::chrono::steady_clock::time_point> accept_error_logged_at;
  bool started = false;
  bool stopped = false;
  uint16_t port = 0;
  net::io_context ioc;
  tcp::acceptor acceptor;
  net::steady_timer retry_timer;  // backs off accept errors (EMFILE)
  std::vector<std::thread> threads;
};

void HttpServer::Impl::DoAccept() {
  acceptor.async_accept(net::make_strand(ioc),
                        beast::bind_front_handler(&Impl::OnAccept, this));
}

bool HttpServer::Impl::ShedOldestIdle() {
  std::shared_ptr<Connection> victim = host.idle.TakeOldest();
  if (!victim) return false;
  shed.fetch_add(1);
  victim->Shed();
  return true;
}

void HttpServer::Impl::LogAcceptError(beast::error_code ec, bool shed_one) {
  ++accept_errors_unlogged;
  const auto now = std::chrono::steady_clock::now();
  if (accept_error_logged_at && now - *accept_error_logged_at < kAcceptErrorLogInterval) return;
  LogWarn("edgealloc: accept failed: " + ec.message() + " (" +
          std::to_string(accept_errors_unlogged) + " time(s) since last said; " +
          std::to_string(host.connections.load()) + " connections open, cap " +
          std::to_string(host.max_connections) + (shed_one ? "; shedding idle ones)" : ")"));
  accept_error_logged_at = now;
  accept_errors_unlogged = 0;
}

void HttpServer::Impl::OnAccept(beast::error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
  if (ec) {
    // Out of file descriptors and the like: free one by shedding the
    // connection idle longest, and back off instead of spinning.
    const bool out_of_fds = ec == net::error::no_descriptors || ec.value() == ENFILE;
    LogAcceptError(ec, out_of_fds && ShedOldestIdle());
    retry_timer.expires_after(HttpServer::kAcceptRetryDelay);
    retry_timer.async_wait([this](beast::error_code ec) {
      if (!ec && acceptor.is_open()) DoAccept();
    });
    return;
  }
  // At the cap, the connection idle longest makes room (the count is over
  // by one until it is gone); with none idle, the new one is refused.
  bool counted = host.connections.fetch_add(1) < host.max_connections || ShedOldestIdle();
  if (!counted) host.connections.fetch_sub(1);
  std::make_shared<Connection>(std::move(socket), &host, counted)->Run();
  DoAccept();
}

HttpServer::HttpServer(HttpServerOptions options, const Admitter* admitter)
    : impl_(std::make_unique<Impl>(std::move(options), admitter)) {}

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
  int& cap = s.host.max_connections;
  cap = s.options.max_connections;
  if (cap <= 0) {
    const int64_t nofile = RaiseDescriptorLimit();
    cap = kMaxConnections;
    if (nofile >= 0 && nofile - kReservedDescriptors < kMaxConnections) {
      cap = static_cast<int>(std::max<int64_t>(kMinConnections, nofile - kReservedDescriptors));
      LogLine("edgealloc: at most " + std::to_string(cap) +
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
  impl_->host.stopping.store(true);
  Impl* impl = impl_.get();
  net::post(impl->acceptor.get_executor(), [impl] {
    beast::error_code ignored;
    impl->acceptor.close(ignored);
    impl->retry_timer.cancel();
  });
}

bool HttpServer::WaitIdle(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (impl_->host.in_flight.load() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

void HttpServer::Stop() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  s.host.stopping.store(true);
  s.ioc.stop();
  for (auto& t : s.threads) t.join();
  s.threads.clear();
}

int HttpServer::open_connections() const { return impl_->host.connections.load(); }
int HttpServer::in_flight() const { return impl_->host.in_flight.load(); }
int64_t HttpServer::shed_connections() const { return impl_->shed.load(); }
int HttpServer::idle_connections() const { return impl_->host.idle.size(); }
int HttpServer::max_connections() const { return impl_->host.max_connections; }
uint64_t HttpServer::deadlines_passed() const { return impl_->host.deadlines_passed.load(); }

}  // namespace server
