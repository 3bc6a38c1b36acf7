#ifndef EDGEALLOC_SERVER_HTTP_CONNECTION_H_
#define EDGEALLOC_SERVER_HTTP_CONNECTION_H_

// Internal to server/http/: one client connection of an HttpServer.

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/http/connection_host.h"
#include "server/http/idle_connections.h"
#include "server/http/message.h"

namespace server {

// One client connection: reads a request, hands it to the handler, writes
// the reply, reads the next; keep-alive, one request in flight, every read
// and write under a timeout (ConnectionLimits, limits.h). Lives on its own
// strand; owned by the shared pointers of its pending operations and of an
// outstanding Reply. Made by the acceptor (server.cc), which keeps what the
// connection shares with it in a ConnectionHost.
//
// Its parts: reading a request and handing it over (connection.cc), writing
// the answer and closing (connection_write.cc), watching for a client that
// goes away while its request waits (connection_client_gone.cc).
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `counted`: the connection is within the cap; if not, it is answered 503
  // overloaded and closed. `host` outlives the connection.
  Connection(boost::asio::ip::tcp::socket&& socket, ConnectionHost* host, bool counted);
  ~Connection();

  // Starts reading (or refusing), on the connection's strand.
  void Run();
  // Closes the connection, which the idle list gave up (TakeOldest) to make
  // room. Any thread: the close runs on the connection's strand.
  void Shed();

 private:
  void Begin();
  // Once per kWarningInterval at most.
  void LogOverloaded();
  // REQUIRES: on the strand, not idle.
  void EnterIdle();
  // False if the connection was shed meanwhile (it is being closed).
  // REQUIRES: on the strand, idle.
  bool LeaveIdle();
  void DoRead();
  // REQUIRES: ec is a read error. Answers what deserves an answer, else closes.
  void OnReadError(boost::beast::error_code ec);
  void OnReadHeader(boost::beast::error_code ec, std::size_t);
  // Asks the host's admission about the request whose header was read:
  // false if it was refused (and is being answered), else true with
  // handler_ and body_limit_ set.
  bool AdmitRequest();
  // For `Expect: 100-continue` once admitted: the 100, then the body.
  void SendContinue();
  void ReadBody();
  void OnReadBody(boost::beast::error_code ec, std::size_t);
  void SendBodyTooLarge();
  // Hands the request read to the handler, with the Reply that writes its
  // answer on this strand and the ClientGoneWatch of this connection.
  void Dispatch();
  // Arms the deadline of the request just handed over (ConnectionHost::
  // request_deadline plus what its handler added), unless it was answered:
  // past it, AnswerPastDeadline answers in the handler's place. `replied`
  // is the flag its Reply shares, so that only one of the two answers.
  using ReplyFlag = std::shared_ptr<std::atomic<bool>>;
  void ArmDeadline(const ReplyFlag& replied);
  void AnswerPastDeadline();
  // Once per kWarningInterval at most, with the count since.
  void LogDeadlinesPassed();
  // Answers and closes; with `drain`, reads and drops what the client still
  // sends (bounded), so it sees this answer rather than a reset.
  void SendError(ApiError error, const std::string& message, bool drain);
  void DoWrite(Response res);
  // Logs the answer `res` of the request being answered, if the access log is on.
  void LogAnswer(const Response& res) const;
  // The response as it goes on the wire, into *out. Without `with_body` (a
  // HEAD), the headers only.
  static void Serialize(const Response& res, bool with_body, std::string* out);
  void OnWrite(boost::beast::error_code ec, std::size_t);
  void DoDrain();
  void DoDrainRead();
  void DoClose();
  // The ClientGoneWatch (message.h) of the request being dispatched: watches
  // the socket while the request waits for its answer. Pipelined bytes are
  // taken into buffer_ (for the next request) so that a close behind them is
  // still seen; an end of input is a close or a half-close, which
  // ProbeHalfClose tells apart.
  ClientGone WatchGone();
  using GoneFlag = std::shared_ptr<std::atomic<bool>>;
  void ArmWatch(const GoneFlag& gone);
  void OnWatchReadable(boost::beast::error_code ec, const GoneFlag& gone);
  void ProbeHalfClose(const GoneFlag& gone);
  // Once buffer_ holds kMaxWatchedBytes: polls the socket for the client's
  // close behind the bytes TCP still holds.
  void WatchPastBound(const GoneFlag& gone);
  // Pipelined bytes taken in while a request waits, at most; past it TCP
  // holds the rest, and the watch polls for a close behind them this often.
  static constexpr size_t kMaxWatchedBytes = 64 * 1024;
  static constexpr std::chrono::milliseconds kPastBoundPollInterval{50};

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  ConnectionHost* host_;
  bool counted_;
  std::optional<http::request_parser<http::string_body>> parser_;
  // Of the request being read, once admitted: who answers it, and the most
  // body it may have (the route's bound when below --max-body-bytes).
  Handler handler_;
  uint64_t body_limit_ = 0;
  bool body_limit_is_route_ = false;
  // The bytes of the response being written; kept between responses so a
  // keep-alive connection does not allocate one a request, unless it was big.
  static constexpr size_t kMaxKeptWireBytes = 64 * 1024;
  std::string wire_;
  unsigned version_ = 11;
  GoneFlag watch_;  // the watch of the request now waiting (null: none)
  bool keep_alive_ = true;
  bool close_ = false;
  bool drain_ = false;
  bool counted_request_ = false;
  bool head_ = false;
  // The request being answered: its id (X-Request-Id, echoed in the reply),
  // and for the access log its method, path and when its header came.
  std::string request_id_;
  std::string method_;
  std::string path_;
  std::chrono::steady_clock::time_point started_{};
  static constexpr size_t kDrainBufferBytes = 8 * 1024;
  std::vector<char> drain_buffer_;
  size_t drained_ = 0;
  // The place in host_->idle while waiting for a request.
  std::optional<IdleConnections::Ticket> idle_ticket_;
  // The deadline of the request being answered: what its handler added
  // (ExtendDeadline, message.h), and the timer DoWrite cancels.
  std::chrono::milliseconds deadline_extra_{0};
  boost::asio::steady_timer deadline_timer_;
  boost::asio::steady_timer watch_timer_;  // WatchPastBound's
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_CONNECTION_H_
