#include "server/http/connection.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <chrono>
#include <exception>
#include <string>

#include "base/log_gate.h"
#include "server/http/framing.h"
#include "server/http/front_rules.h"
#include "server/http/limits.h"
#include "server/http/log.h"

// One connection's reading of a request and handing it to the handler; its
// writing is in connection_write.cc, its watch for a client that goes away
// in connection_client_gone.cc.

namespace server {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

Connection::Connection(tcp::socket&& socket, ConnectionHost* host, bool counted)
    : stream_(std::move(socket)),
      host_(host),
      counted_(counted),
      deadline_timer_(stream_.get_executor()),
      watch_timer_(stream_.get_executor()) {}

Connection::~Connection() {
  if (idle_ticket_) host_->idle.Leave(*idle_ticket_);
  if (counted_) host_->connections.fetch_sub(1);
}

void Connection::Run() {
  net::dispatch(stream_.get_executor(),
                beast::bind_front_handler(&Connection::Begin, shared_from_this()));
}

void Connection::Shed() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    beast::error_code ignored;
    self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    self->stream_.socket().close(ignored);
  });
}

void Connection::Begin() {
  if (!counted_) {
    LogOverloaded();
    Response res = ErrorResponse(ApiError::kOverloaded, "too many open connections; retry shortly");
    res.set(http::field::retry_after, "1");
    keep_alive_ = false;
    return DoWrite(std::move(res));
  }
  DoRead();
}

void Connection::LogOverloaded() {
  // One warning a period, not one a connection.
  static base::LogGate gate(ConnectionLimits::kWarningInterval);
  uint64_t held = 0;
  if (!gate.Due(&held)) return;
  LogWarn("edgealloc: at the connection cap of " + std::to_string(host_->max_connections) +
          " with none idle: answering new connections 503 overloaded");
}

void Connection::EnterIdle() { idle_ticket_ = host_->idle.Enter(weak_from_this()); }

bool Connection::LeaveIdle() {
  const bool kept = host_->idle.Leave(*idle_ticket_);
  idle_ticket_.reset();
  return kept;
}

void Connection::DoRead() {
  EnterIdle();
  head_ = false;
  parser_.emplace();
  parser_->header_limit(ConnectionLimits::kHeaderLimitBytes);
  // The body's limit is known once the request is admitted (AdmitRequest):
  // till then none, so that a refusal is not a 413 for a body never read.
  parser_->body_limit(boost::none);
  stream_.expires_after(ConnectionLimits::kReadTimeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          beast::bind_front_handler(&Connection::OnReadHeader,
                                                    shared_from_this()));
}

void Connection::OnReadError(beast::error_code ec) {
  if (ec == http::error::end_of_stream) return DoClose();
  if (ec == http::error::header_limit) {
    return SendError(ApiError::kHeadersTooLarge,
                     "request line and headers are over " +
                         std::to_string(ConnectionLimits::kHeaderLimitBytes) + " bytes",
                     true);
  }
  if (ec == http::error::body_limit) return SendBodyTooLarge();
  if (ec.category() == http::make_error_code(http::error::bad_method).category()) {
    return SendError(ApiError::kBadRequest, "malformed HTTP request: " + ec.message(), true);
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
    case Framing::kBad: return SendError(ApiError::kBadRequest, why, true);
    case Framing::kUnsupported: return SendError(ApiError::kNotImplemented, why, true);
  }
  why = HostFieldProblem(req);
  if (!why.empty()) return SendError(ApiError::kBadRequest, why, true);
  if (!AdmitRequest()) return;
  auto length = parser_->content_length();
  if (length && *length > body_limit_) return SendBodyTooLarge();
  parser_->body_limit(body_limit_);
  if (parser_->is_done()) return Dispatch();
  // HTTP/1.0 has no 100 (Continue), and a server must not send it to a 1.0
  // client (RFC 9110 15.2): such a client sends its body anyway.
  if (version_ >= 11 && beast::iequals(req[http::field::expect], "100-continue")) {
    return SendContinue();
  }
  ReadBody();
}

bool Connection::AdmitRequest() {
  body_limit_ = static_cast<uint64_t>(host_->max_body_bytes);
  Admission admission = host_->admitter->Admit(parser_->get());
  if (admission.refusal) {
    // Answered before its body is read, or sent (a client waiting for its
    // 100 Continue never sends it): a request with a body cannot be
    // followed on this connection, so it closes, draining what comes.
    const bool has_body = !parser_->is_done();
    keep_alive_ = !has_body && parser_->get().keep_alive();
    drain_ = has_body;
    DoWrite(std::move(*admission.refusal));
    return false;
  }
  if (admission.max_body_bytes < body_limit_) {
    body_limit_ = admission.max_body_bytes;
    body_limit_is_route_ = true;
  } else {
    body_limit_is_route_ = false;
  }
  handler_ = std::move(admission.handler);
  return true;
}

void Connection::SendContinue() {
  auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_,
                                                                 version_);
  stream_.expires_after(ConnectionLimits::kWriteTimeout);
  http::async_write(stream_, *cont,
                    [self = shared_from_this(), cont](beast::error_code ec, std::size_t) {
                      if (ec) return;
                      self->ReadBody();
                    });
}

void Connection::ReadBody() {
  stream_.expires_after(ConnectionLimits::kReadTimeout);
  http::async_read(stream_, buffer_, *parser_,
                   beast::bind_front_handler(&Connection::OnReadBody, shared_from_this()));
}

void Connection::OnReadBody(beast::error_code ec, std::size_t) {
  if (ec) return OnReadError(ec);
  Dispatch();
}

void Connection::SendBodyTooLarge() {
  SendError(ApiError::kBodyTooLarge,
            "request body is over the limit of " + std::to_string(body_limit_) +
                (body_limit_is_route_ ? " bytes, the most a valid body of this request can be"
                                      : " bytes (--max-body-bytes)"),
            true);
}

void Connection::Dispatch() {
  Request req = parser_->release();
  keep_alive_ = req.keep_alive();
  host_->in_flight.fetch_add(1);
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
  // Weak: a handler that keeps the watch does not keep the connection.
  ClientGoneWatch watch = [weak = weak_from_this()] {
    std::shared_ptr<Connection> connection = weak.lock();
    return connection ? connection->WatchGone() : ClientGone();
  };
  deadline_extra_ = std::chrono::milliseconds(0);
  ExtendDeadline extend = [weak = weak_from_this()](std::chrono::milliseconds more) {
    if (std::shared_ptr<Connection> connection = weak.lock()) connection->deadline_extra_ += more;
  };
  // The one try at the HTTP edge: nothing a handler throws reaches Asio.
  try {
    Handler handler = std::move(handler_);
    handler(std::move(req), reply, std::move(watch), std::move(extend));
  } catch (const std::exception& e) {
    LogError("edgealloc: internal error in a handler (request_id " + request_id_ + "): " + e.what());
    reply(ErrorResponse(kInternalError.error, kInternalError.message));
  } catch (...) {
    LogError("edgealloc: internal error in a handler (request_id " + request_id_ +
             "): unknown exception");
    reply(ErrorResponse(kInternalError.error, kInternalError.message));
  }
  ArmDeadline(replied);
}

void Connection::ArmDeadline(const ReplyFlag& replied) {
  if (host_->request_deadline.count() <= 0 || replied->load()) return;
  // A reply posts its DoWrite to this strand, which runs after this and
  // cancels the timer; a wait already done finds the flag taken.
  deadline_timer_.expires_after(host_->request_deadline + deadline_extra_);
  deadline_timer_.async_wait([self = shared_from_this(), replied](beast::error_code ec) {
    if (ec || replied->exchange(true)) return;
    self->AnswerPastDeadline();
  });
}

void Connection::AnswerPastDeadline() {
  host_->deadlines_passed.fetch_add(1);
  host_->deadlines_unlogged.fetch_add(1);
  LogDeadlinesPassed();
  const auto deadline = host_->request_deadline + deadline_extra_;
  DoWrite(ErrorResponse(ApiError::kUnavailable,
                        "no answer within the request deadline (" +
                            std::to_string(deadline.count()) +
                            " ms); its outcome is unknown: retry (a claim with the same "
                            "idempotency_key) (request id " +
                            request_id_ + ")"));
}

void Connection::LogDeadlinesPassed() {
  // One warning a period; deadlines_unlogged counts the requests meanwhile.
  static base::LogGate gate(ConnectionLimits::kWarningInterval);
  uint64_t held = 0;
  if (!gate.Due(&held)) return;
  LogWarn("edgealloc: " + std::to_string(host_->deadlines_unlogged.exchange(0)) +
          " request(s) not answered within --request-deadline-ms (" +
          std::to_string(host_->request_deadline.count()) +
          " ms, more for a claim's wait_ms) were answered 503 unavailable (the last: request_id " +
          request_id_ + "); their answers from the store were lost or are stuck");
}

}  // namespace server
