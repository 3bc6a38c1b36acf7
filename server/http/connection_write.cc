#include "server/http/connection.h"

#include <boost/asio/write.hpp>

#include <chrono>
#include <string>

#include "server/http/limits.h"
#include "server/http/log.h"

// One connection's writing of an answer, and its closing: after the answer,
// a refused request's body is drained, a last answer closes, else the next
// request is read (connection.cc).

namespace server {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

void Connection::SendError(ApiError error, const std::string& message, bool drain) {
  keep_alive_ = false;
  drain_ = drain;
  DoWrite(ErrorResponse(error, message));
}

void Connection::DoWrite(Response res) {
  watch_.reset();  // answered: nothing to watch for any more
  watch_timer_.cancel();
  deadline_timer_.cancel();
  res.version(version_ == 10 ? 10 : 11);
  res.set(http::field::server, "edgealloc");
  // Refused before its header was read whole: an id of its own.
  if (request_id_.empty()) request_id_ = RequestIdOf("");
  res.set("X-Request-Id", request_id_);
  res.prepare_payload();
  LogAnswer(res);
  request_id_.clear();
  method_.clear();
  path_.clear();
  started_ = {};
  // Close after a refusal, on request, and while stopping, so that clients
  // move to another server.
  close_ = !keep_alive_ || host_->stopping.load();
  res.keep_alive(!close_);
  Serialize(res, !head_, &wire_);
  stream_.expires_after(ConnectionLimits::kWriteTimeout);
  net::async_write(stream_, net::buffer(wire_),
                   beast::bind_front_handler(&Connection::OnWrite, shared_from_this()));
}

void Connection::LogAnswer(const Response& res) const {
  if (!AccessLogEnabled()) return;
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
    host_->in_flight.fetch_sub(1);
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
  stream_.expires_after(ConnectionLimits::kDrainTimeout);
  // Nothing read any more is kept: a refused client's connection holds a
  // small buffer while it drains, not what its headers were read into.
  buffer_.clear();
  buffer_.shrink_to_fit();
  drain_buffer_.resize(kDrainBufferBytes);
  DoDrainRead();
}

void Connection::DoDrainRead() {
  stream_.async_read_some(
      net::buffer(drain_buffer_),
      [self = shared_from_this()](beast::error_code ec, std::size_t n) {
        self->drained_ += n;
        if (ec || self->drained_ >= ConnectionLimits::kMaxDrainBytes) {
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
