#include "server/http/connection.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <memory>
#include <string_view>

// One connection's watch for a client that goes away while its request waits
// for an answer (the ClientGoneWatch it hands the handler, message.h).

namespace server {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

ClientGone Connection::WatchGone() {
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
    if (room == 0) return WatchPastBound(gone);
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

void Connection::WatchPastBound(const GoneFlag& gone) {
  if (watch_ != gone) return;
  // buffer_ holds all it may: the rest stays with TCP, and a wait for
  // readable would end at once for ever. The client's close (its FIN) is
  // still told by POLLRDHUP, and a reset by POLLERR or POLLHUP, however
  // much it sent before: asked every kPastBoundPollInterval.
  pollfd probe{stream_.socket().native_handle(), POLLRDHUP, 0};
  const int ready = ::poll(&probe, 1, 0);
  if (ready > 0 && (probe.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) {
    gone->store(true);
    return;
  }
  if (ready > 0 && (probe.revents & POLLRDHUP) != 0) return ProbeHalfClose(gone);
  watch_timer_.expires_after(kPastBoundPollInterval);
  watch_timer_.async_wait([self = shared_from_this(), gone](beast::error_code ec) {
    if (!ec) self->WatchPastBound(gone);
  });
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

}  // namespace server
