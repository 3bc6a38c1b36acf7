#include "base/mutex.h"
#include "server/http/server.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <list>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace server {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

class Connection;

// Owned by the HttpServer. Declared so that the io_context (and with it the
// pending handlers that still hold Connections) dies before the counters
// those Connections touch in their destructors.
struct HttpServer::Impl {
  Impl(HttpServerOptions o, Handler h)
      : options(std::move(o)), handler(std::move(h)), ioc(options.threads),
        acceptor(net::make_strand(ioc)), retry_timer(acceptor.get_executor()) {}

  void DoAccept();
  void OnAccept(beast::error_code ec, tcp::socket socket);
  // Closes the connection idle longest. False if none is idle.
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
  net::io_context ioc;
  tcp::acceptor acceptor;
  net::steady_timer retry_timer;  // backs off accept errors (EMFILE)
  std::vector<std::thread> threads;
};

namespace {

enum class Framing { kOk, kBad, kUnsupported };

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

// RFC 9112 §6.1, §6.3 on a request's Transfer-Encoding fields (all of them,
// in order, as one list). *why says what is wrong.
Framing CheckTransferEncoding(const Request& req, std::string* why) {
  auto [first, last] = req.equal_range(http::field::transfer_encoding);
  if (first == last) return Framing::kOk;
  std::vector<std::string> codings;
  for (auto it = first; it != last; ++it) {
    std::string_view value = it->value();
    size_t i = 0;
    while (i <= value.size()) {
      size_t comma = std::min(value.find(',', i), value.size());
      std::string_view item = value.substr(i, comma - i);
      while (!item.empty() && IsSpace(item.front())) item.remove_prefix(1);
      while (!item.empty() && IsSpace(item.back())) item.remove_suffix(1);
      if (!item.empty()) {
        std::string coding(item);
        std::transform(coding.begin(), coding.end(), coding.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        codings.push_back(std::move(coding));
      }
      i = comma + 1;
    }
  }
  if (codings.empty() || codings.back() != "chunked") {
    *why = "Transfer-Encoding must end in chunked; the body's length cannot be known";
    return Framing::kBad;
  }
  if (std::count(codings.begin(), codings.end(), "chunked") > 1) {
    *why = "Transfer-Encoding names chunked more than once";
    return Framing::kBad;
  }
  if (req.find(http::field::content_length) != req.end()) {
    *why = "a request must not have both Transfer-Encoding and Content-Length";
    return Framing::kBad;
  }
  if (codings.size() > 1) {
    *why = "Transfer-Encoding " + codings.front() + " is not supported; only chunked is";
    return Framing::kUnsupported;
  }
  return Framing::kOk;
}

}  // namespace

// One client connection: reads a request, hands it to the handler, writes
// the reply, reads the next. Lives on its own strand; owned by the shared
// pointers of its pending operations and of an outstanding Reply.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket&& socket, HttpServer::Impl* server, bool counted)
      : stream_(std::move(socket)), server_(server), counted_(counted) {}

  ~Connection() {
    {
      base::MutexLock lock(&server_->idle_mu);
      if (idle_) server_->idle.erase(idle_pos_);
    }
    if (counted_) server_->connections.fetch_sub(1);
  }

  void Run() {
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&Connection::Begin, shared_from_this()));
  }

  // Closes the connection, which was idle (ShedOldestIdle). On its strand.
  void Shed() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

 private:
  friend struct HttpServer::Impl;

  void Begin() {
    if (!counted_) {
      LogOverloaded();
      Response res = ErrorResponse(503, "overloaded", "too many open connections; retry shortly");
      res.set(http::field::retry_after, "1");
      keep_alive_ = false;
      return DoWrite(std::move(res));
    }
    DoRead();
  }

  // Once per kAcceptErrorLogInterval at most, like accept errors.
  void LogOverloaded() {
    static std::atomic<int64_t> last_ms{-1};
    const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now().time_since_epoch()).count();
    int64_t last = last_ms.load();
    const int64_t interval_ms =
        std::chrono::milliseconds(HttpServer::kAcceptErrorLogInterval).count();
    if (last >= 0 && now_ms - last < interval_ms) return;
    if (!last_ms.compare_exchange_strong(last, now_ms)) return;
    LogLine("edgealloc: at the connection cap of " + std::to_string(server_->max_connections) +
            " with none idle: answering new connections 503 overloaded");
  }

  // REQUIRES: on the strand, not idle.
  void EnterIdle() {
    base::MutexLock lock(&server_->idle_mu);
    idle_pos_ = server_->idle.insert(server_->idle.end(), weak_from_this());
    idle_ = true;
  }

  // False if the connection was shed meanwhile (it is being closed).
  // REQUIRES: on the strand.
  bool LeaveIdle() {
    base::MutexLock lock(&server_->idle_mu);
    if (idle_) server_->idle.erase(idle_pos_);
    idle_ = false;
    return !shed_;
  }

  void DoRead() {
    EnterIdle();
    head_ = false;
    parser_.emplace();
    parser_->header_limit(HttpServer::kHeaderLimitBytes);
    parser_->body_limit(static_cast<uint64_t>(server_->options.max_body_bytes));
    stream_.expires_after(HttpServer::kReadTimeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Connection::OnReadHeader,
                                                      shared_from_this()));
  }

  // REQUIRES: ec is a read error. Answers what deserves an answer, else closes.
  void OnReadError(beast::error_code ec) {
    if (ec == http::error::end_of_stream) return DoClose();
    if (ec == http::error::header_limit) {
      return SendError(431, "headers_too_large",
                       "request line and headers are over " +
                           std::to_string(HttpServer::kHeaderLimitBytes) + " bytes",
                       true);
    }
    if (ec == http::error::body_limit) return SendBodyTooLarge();
    if (ec.category() == http::make_error_code(http::error::bad_method).category()) {
      return SendError(400, "bad_request", "malformed HTTP request: " + ec.message(), true);
    }
    // Timeouts, resets, shutdown: nothing to answer.
    beast::error_code ignored;
    stream_.socket().close(ignored);
  }

  void OnReadHeader(beast::error_code ec, std::size_t) {
    if (!LeaveIdle()) return;  // shed: its socket is closed
    if (ec) return OnReadError(ec);
    const Request& req = parser_->get();
    version_ = req.version();
    head_ = req.method() == http::verb::head;
    std::string why;
    switch (CheckTransferEncoding(req, &why)) {
      case Framing::kOk: break;
      case Framing::kBad: return SendError(400, "bad_request", why, true);
      case Framing::kUnsupported: return SendError(501, "not_implemented", why, true);
    }
    auto length = parser_->content_length();
    if (length && *length > static_cast<uint64_t>(server_->options.max_body_bytes)) {
      return SendBodyTooLarge();
    }
    if (parser_->is_done()) return Dispatch();
    if (beast::iequals(req[http::field::expect], "100-continue")) {
      // Refused before the client sends its body (a bad key is a 401, not
      // a go-ahead); the body it may send anyway is drained.
      if (server_->options.precheck) {
        std::optional<Response> refusal = server_->options.precheck(req);
        if (refusal) {
          keep_alive_ = false;
          drain_ = true;
          return DoWrite(std::move(*refusal));
        }
      }
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_,
                                                                     version_);
      stream_.expires_after(HttpServer::kWriteTimeout);
      http::async_write(stream_, *cont,
                        [self = shared_from_this(), cont](beast::error_code ec, std::size_t) {
                          if (ec) return;
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    stream_.expires_after(HttpServer::kReadTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Connection::OnReadBody, shared_from_this()));
  }

  void OnReadBody(beast::error_code ec, std::size_t) {
    if (ec) return OnReadError(ec);
    Dispatch();
  }

  void SendBodyTooLarge() {
    SendError(413, "body_too_large",
              "request body is over the limit of " +
                  std::to_string(server_->options.max_body_bytes) + " bytes (--max-body-bytes)",
              true);
  }

  void Dispatch() {
    Request req = parser_->release();
    keep_alive_ = req.keep_alive();
    server_->in_flight.fetch_add(1);
    counted_request_ = true;
    stream_.expires_never();  // no read is pending while the handler works
    auto self = shared_from_this();
    auto replied = std::make_shared<std::atomic<bool>>(false);
    Reply reply = [self, replied](Response res) {
      if (replied->exchange(true)) return;
      net::post(self->stream_.get_executor(), [self, res = std::move(res)]() mutable {
        self->DoWrite(std::move(res));
      });
    };
    // The one try at the HTTP edge: nothing a handler throws reaches Asio.
    try {
      server_->handler(std::move(req), reply);
    } catch (const std::exception& e) {
      LogLine(std::string("edgealloc: internal error in a handler: ") + e.what());
      reply(ErrorResponse(500, "internal", "internal error; it has been logged"));
    } catch (...) {
      LogLine("edgealloc: internal error in a handler (unknown exception)");
      reply(ErrorResponse(500, "internal", "internal error; it has been logged"));
    }
  }

  // Answers and closes; with `drain`, reads and drops what the client still
  // sends (bounded), so it sees this answer rather than a reset.
  void SendError(int status, std::string_view code, const std::string& message, bool drain) {
    keep_alive_ = false;
    drain_ = drain;
    DoWrite(ErrorResponse(status, code, message));
  }

  void DoWrite(Response res) {
    res.version(version_ == 10 ? 10 : 11);
    res.set(http::field::server, "edgealloc");
    res.prepare_payload();
    // Close after a refusal, on request, and while stopping, so that clients
    // move to another server.
    close_ = !keep_alive_ || server_->stopping.load();
    res.keep_alive(!close_);
    Serialize(res, !head_, &wire_);
    stream_.expires_after(HttpServer::kWriteTimeout);
    net::async_write(stream_, net::buffer(wire_),
                     beast::bind_front_handler(&Connection::OnWrite, shared_from_this()));
  }

  // The response as it goes on the wire, into one reused string: Beast's
  // serializer (a view over header pieces and body, written in steps) took
  // about a tenth of the server's CPU under claims, as much as the send.
  static void Serialize(const Response& res, bool with_body, std::string* out) {
    out->clear();
    out->append(res.version() == 10 ? "HTTP/1.0 " : "HTTP/1.1 ");
    char status[4];
    const unsigned code = res.result_int();
    status[0] = static_cast<char>('0' + code / 100 % 10);
    status[1] = static_cast<char>('0' + code / 10 % 10);
    status[2] = static_cast<char>('0' + code % 10);
    status[3] = ' ';
    out->append(status, 4);
    out->append(res.reason());
    out->append("\r\n");
    for (const auto& field : res) {
      out->append(field.name_string());
      out->append(": ");
      out->append(field.value());
      out->append("\r\n");
    }
    out->append("\r\n");
    // A HEAD's answer: the headers (Content-Length included) of the answer
    // a GET would have had, without its body (RFC 9110 §9.3.2).
    if (with_body) out->append(res.body());
  }

  void OnWrite(beast::error_code ec, std::size_t) {
    // A request is in flight until its answer is written (or cannot be):
    // Service::Stop waits for that before the io threads stop, so that a
    // reply posted by the last commits is not dropped unsent.
    if (counted_request_) {
      counted_request_ = false;
      server_->in_flight.fetch_sub(1);
    }
    if (ec) return;
    if (wire_.capacity() > kMaxKeptWireBytes) std::string().swap(wire_);
    if (drain_) return DoDrain();
    if (close_) return DoClose();
    DoRead();
  }

  void DoDrain() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(HttpServer::kDrainTimeout);
    drain_buffer_.resize(64 * 1024);
    DoDrainRead();
  }

  void DoDrainRead() {
    stream_.async_read_some(
        net::buffer(drain_buffer_),
        [self = shared_from_this()](beast::error_code ec, std::size_t n) {
          self->drained_ += n;
          if (ec || self->drained_ >= HttpServer::kMaxDrainBytes) {
            beast::error_code ignored;
            self->stream_.socket().close(ignored);
            return;
          }
          self->DoDrainRead();
        });
  }

  void DoClose() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  HttpServer::Impl* server_;
  bool counted_;
  std::optional<http::request_parser<http::string_body>> parser_;
  // The bytes of the response being written; kept between responses so a
  // keep-alive connection does not allocate one a request, unless it was big.
  static constexpr size_t kMaxKeptWireBytes = 64 * 1024;
  std::string wire_;
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool close_ = false;
  bool drain_ = false;
  bool counted_request_ = false;
  bool head_ = false;
  std::vector<char> drain_buffer_;
  size_t drained_ = 0;
  // In server_->idle at idle_pos_ while idle_; shed_ once ShedOldestIdle
  // took it out to close it.
  bool idle_ GUARDED_BY(server_->idle_mu) = false;
  bool shed_ GUARDED_BY(server_->idle_mu) = false;
  std::list<std::weak_ptr<Connection>>::iterator idle_pos_ GUARDED_BY(server_->idle_mu);
};

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
      LogLine("edgealloc: accept failed: " + ec.message() + " (" +
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
          LogLine(std::string("edgealloc: io thread caught: ") + e.what());
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
int HttpServer::max_connections() const { return impl_->max_connections; }

}  // namespace server
