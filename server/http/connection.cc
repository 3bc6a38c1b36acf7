#include "server/http/connection.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <atomic>
#include <sys/socket.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <exception>
#include <string>
#include <vector>

#include "server/http/log.h"

namespace server {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

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

Connection::Connection(tcp::socket&& socket, HttpServer::Impl* server, bool counted)
    : stream_(std::move(socket)), server_(server), counted_(counted) {}

Connection::~Connection() {
  {
    base::MutexLock lock(&server_->idle_mu);
    if (idle_) server_->idle.erase(idle_pos_);
  }
  if (counted_) server_->connections.fetch_sub(1);
}

void Connection::Run() {
  net::dispatch(stream_.get_executor(),
                beast::bind_front_handler(&Connection::Begin, shared_from_this()));
}

void Connection::Shed() {
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.socket().close(ignored);
}

void Connection::Begin() {
  if (!counted_) {
    LogOverloaded();
    Response res = ErrorResponse(503, "overloaded", "too many open connections; retry shortly");
    res.set(http::field::retry_after, "1");
    keep_alive_ = false;
    return DoWrite(std::move(res));
  }
  DoRead();
}

void Connection::LogOverloaded() {
  static std::atomic<int64_t> last_ms{-1};
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now().time_since_epoch()).count();
  int64_t last = last_ms.load();
  const int64_t interval_ms =
      std::chrono::milliseconds(HttpServer::kAcceptErrorLogInterval).count();
  if (last >= 0 && now_ms - last < interval_ms) return;
  if (!last_ms.compare_exchange_strong(last, now_ms)) return;
  LogWarn("edgealloc: at the connection cap of " + std::to_string(server_->max_connections) +
          " with none idle: answering new connections 503 overloaded");
}

void Connection::EnterIdle() {
  base::MutexLock lock(&server_->idle_mu);
  idle_pos_ = server_->idle.insert(server_->idle.end(), weak_from_this());
  idle_ = true;
}

bool Connection::LeaveIdle() {
  base::MutexLock lock(&server_->idle_mu);
  if (idle_) server_->idle.erase(idle_pos_);
  idle_ = false;
  return !shed_;
}

void Connection::DoRead() {
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

void Connection::OnReadError(beast::error_code ec) {
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

void Connection::OnReadHeader(beast::error_code ec, std::size_t) {
  if (!LeaveIdle()) return;  // shed: its socket is closed
  if (ec) return OnReadError(ec);
  Request& req = parser_->get();
  version_ = req.version();
  head_ = req.method() == http::verb::head;
  // The request's id from here on: the client's, if it is a sane one, else
  // ours; handlers find it in the request's X-Request-Id.
  request_id_ = RequestIdOf(req["X-Request-Id"]);
  req.set("X-Request-Id", request_id_);
  started_ = std::chrono::steady_clock::now();
  if (AccessLogEnabled()) {
    method_.assign(req.method_string());
    const std::string_view target = req.target();
    path_.assign(target.substr(0, target.find('?')));
  }
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
  // HTTP/1.0 has no 100 (Continue), and a server must not send it to a 1.0
  // client (RFC 9110 15.2): such a client sends its body anyway.
  if (version_ >= 11 && beast::iequals(req[http::field::expect], "100-continue")) {
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

void Connection::ReadBody() {
  stream_.expires_after(HttpServer::kReadTimeout);
  http::async_read(stream_, buffer_, *parser_,
                   beast::bind_front_handler(&Connection::OnReadBody, shared_from_this()));
}

void Connection::OnReadBody(beast::error_code ec, std::size_t) {
  if (ec) return OnReadError(ec);
  Dispatch();
}

void Connection::SendBodyTooLarge() {
  SendError(413, "body_too_large",
            "request body is over the limit of " +
                std::to_string(server_->options.max_body_bytes) + " bytes (--max-body-bytes)",
            true);
}

namespace {
// The connection whose handler runs on this thread now (WatchClientGone).
thread_local Connection* dispatching = nullptr;
}  // namespace

std::function<bool()> WatchClientGone() {
  return dispatching != nullptr ? dispatching->WatchGone() : std::function<bool()>();
}

std::function<bool()> Connection::WatchGone() {
  auto gone = std::make_shared<std::atomic<bool>>(false);
  watch_ = gone;
  ArmWatch(gone);
  return [gone] { return gone->load(); };
}

void Connection::ArmWatch(const GoneFlag& gone) {
  stream_.socket().async_wait(tcp::socket::wait_read,
                              [self = shared_from_this(), gone](beast::error_code ec) {
                                self->OnWatchReadable(ec, gone);
                              });
}

void Connection::OnWatchReadable(beast::error_code ec, const GoneFlag& gone) {
  // Answered since (DoWrite ended the watch): the next read owns the socket
  // and buffer_ now.
  if (watch_ != gone) return;
  if (ec) {
    if (ec != net::error::operation_aborted) gone->store(true);
    return;
  }
  // No read is pending while the handler works, so buffer_ is free to take
  // what the client pipelined; the parser reads it from there next.
  const int fd = stream_.socket().native_handle();
  for (;;) {
    const size_t room = std::min<size_t>(4096, kMaxWatchedBytes - std::min(kMaxWatchedBytes,
                                                                          buffer_.size()));
    if (room == 0) return;  // bounded: the rest stays with TCP, unwatched
    auto space = buffer_.prepare(room);
    const ssize_t n = ::recv(fd, space.data(), space.size(), MSG_DONTWAIT);
    if (n > 0) {
      buffer_.commit(static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return ProbeHalfClose(gone);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return ArmWatch(gone);
    gone->store(true);  // reset, or any other failure: nobody will read an answer
    return;
  }
}

void Connection::ProbeHalfClose(const GoneFlag& gone) {
  // The client closed, or only shut its sending side and waits for the
  // answer (HTTP allows that): TCP tells them apart only once something is
  // sent, which a closed socket answers with a reset. An interim
  // "100 Continue" is that something: an HTTP/1.1 client must accept an
  // unexpected 1xx (RFC 9110 §15.2); an HTTP/1.0 client must get none, so
  // its end of input counts as gone.
  if (version_ == 10) {
    gone->store(true);
    return;
  }
  static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  const ssize_t n = ::send(stream_.socket().native_handle(), kContinue.data(), kContinue.size(),
                           MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n != static_cast<ssize_t>(kContinue.size())) {
    gone->store(true);
    return;
  }
  // A reset raises the socket's error condition, which ends this wait.
  stream_.socket().async_wait(tcp::socket::wait_error,
                              [self = shared_from_this(), gone](beast::error_code ec) {
                                if (self->watch_ == gone && !ec) gone->store(true);
                              });
}

void Connection::Dispatch() {
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
  struct Dispatching {
    explicit Dispatching(Connection* c) { dispatching = c; }
    ~Dispatching() { dispatching = nullptr; }
  } during(this);
  try {
    server_->handler(std::move(req), reply);
  } catch (const std::exception& e) {
    LogError("edgealloc: internal error in a handler (request_id " + request_id_ + "): " + e.what());
    reply(ErrorResponse(500, "internal", "internal error; it has been logged"));
  } catch (...) {
    LogError("edgealloc: internal error in a handler (request_id " + request_id_ +
             "): unknown exception");
    reply(ErrorResponse(500, "internal", "internal error; it has been logged"));
  }
}

void Connection::SendError(int status, std::string_view code, const std::string& message,
                           bool drain) {
  keep_alive_ = false;
  drain_ = drain;
  DoWrite(ErrorResponse(status, code, message));
}

void Connection::DoWrite(Response res) {
  watch_.reset();  // answered: nothing to watch for any more
  res.version(version_ == 10 ? 10 : 11);
  res.set(http::field::server, "edgealloc");
  // Refused before its header was read whole: an id of its own.
  if (request_id_.empty()) request_id_ = RequestIdOf("");
  res.set("X-Request-Id", request_id_);
  res.prepare_payload();
  if (AccessLogEnabled()) {
    AccessRecord record;
    record.method = method_.empty() ? std::string_view("-") : std::string_view(method_);
    record.path = path_.empty() ? std::string_view("-") : std::string_view(path_);
    record.status = static_cast<int>(res.result_int());
    record.bytes = res.body().size();
    record.micros = started_ == std::chrono::steady_clock::time_point{}
                        ? 0
                        : std::chrono::duration_cast<std::chrono::microseconds>(
                              std::chrono::steady_clock::now() - started_)
                              .count();
    record.request_id = request_id_;
    LogAccess(record);
  }
  request_id_.clear();
  method_.clear();
  path_.clear();
  started_ = {};
  // Close after a refusal, on request, and while stopping, so that clients
  // move to another server.
  close_ = !keep_alive_ || server_->stopping.load();
  res.keep_alive(!close_);
  Serialize(res, !head_, &wire_);
  stream_.expires_after(HttpServer::kWriteTimeout);
  net::async_write(stream_, net::buffer(wire_),
                   beast::bind_front_handler(&Connection::OnWrite, shared_from_this()));
}

// Into one reused string rather than through Beast's serializer, which cost
// far more CPU a request (docs/performance.md).
void Connection::Serialize(const Response& res, bool with_body, std::string* out) {
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

void Connection::OnWrite(beast::error_code ec, std::size_t) {
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

void Connection::DoDrain() {
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream_.expires_after(HttpServer::kDrainTimeout);
  drain_buffer_.resize(64 * 1024);
  DoDrainRead();
}

void Connection::DoDrainRead() {
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

void Connection::DoClose() {
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

}  // namespace server
