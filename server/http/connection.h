#ifndef EDGEALLOC_SERVER_HTTP_CONNECTION_H_
#define EDGEALLOC_SERVER_HTTP_CONNECTION_H_

// Internal to server/http/: one client connection of an HttpServer.

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <cstddef>
#include <list>
#include <chrono>
#include <memory>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "server/http/message.h"
#include "server/http/server.h"
#include "server/http/server_impl.h"

namespace server {

// One client connection: reads a request, hands it to the handler, writes
// the reply, reads the next; keep-alive, one request in flight, every read
// and write under a timeout (HttpServer's limits). Lives on its own strand;
// owned by the shared pointers of its pending operations and of an
// outstanding Reply. Made by the acceptor (HttpServer::Impl::OnAccept).
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `counted`: the connection is within the cap; if not, it is answered 503
  // overloaded and closed.
  Connection(boost::asio::ip::tcp::socket&& socket, HttpServer::Impl* server, bool counted);
  ~Connection();

  // Starts reading (or refusing), on the connection's strand.
  void Run();
  // WatchClientGone (message.h) for the request being dispatched.
  std::function<bool()> WatchGone();

  // Closes the connection, which was idle (ShedOldestIdle). On its strand.
  void Shed();

 private:
  friend struct HttpServer::Impl;  // ShedOldestIdle marks a victim shed

  void Begin();
  // Once per kAcceptErrorLogInterval at most, like accept errors.
  void LogOverloaded();
  // REQUIRES: on the strand, not idle.
  void EnterIdle();
  // False if the connection was shed meanwhile (it is being closed).
  // REQUIRES: on the strand.
  bool LeaveIdle();
  void DoRead();
  // REQUIRES: ec is a read error. Answers what deserves an answer, else closes.
  void OnReadError(boost::beast::error_code ec);
  void OnReadHeader(boost::beast::error_code ec, std::size_t);
  void ReadBody();
  void OnReadBody(boost::beast::error_code ec, std::size_t);
  void SendBodyTooLarge();
  // Hands the request read to the handler, with the Reply that writes its
  // answer on this strand.
  void Dispatch();
  // Answers and closes; with `drain`, reads and drops what the client still
  // sends (bounded), so it sees this answer rather than a reset.
  void SendError(int status, std::string_view code, const std::string& message, bool drain);
  void DoWrite(Response res);
  // The response as it goes on the wire, into *out. Without `with_body` (a
  // HEAD), the headers only.
  static void Serialize(const Response& res, bool with_body, std::string* out);
  void OnWrite(boost::beast::error_code ec, std::size_t);
  void DoDrain();
  void DoDrainRead();
  void DoClose();
  // WatchGone's watch of the socket while a request waits for its answer:
  // pipelined bytes are taken into buffer_ (for the next request) so that a
  // close behind them is still seen; an end of input is a close or a
  // half-close, which ProbeHalfClose tells apart.
  using GoneFlag = std::shared_ptr<std::atomic<bool>>;
  void ArmWatch(const GoneFlag& gone);
  void OnWatchReadable(boost::beast::error_code ec, const GoneFlag& gone);
  void ProbeHalfClose(const GoneFlag& gone);
  // Pipelined bytes taken in while a request waits, at most; past it the
  // watch stops (TCP holds the rest) and a close behind them goes unseen.
  static constexpr size_t kMaxWatchedBytes = 64 * 1024;

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  HttpServer::Impl* server_;
  bool counted_;
  std::optional<http::request_parser<http::string_body>> parser_;
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
  std::vector<char> drain_buffer_;
  size_t drained_ = 0;
  // In server_->idle at idle_pos_ while idle_; shed_ once ShedOldestIdle
  // took it out to close it.
  bool idle_ GUARDED_BY(server_->idle_mu) = false;
  bool shed_ GUARDED_BY(server_->idle_mu) = false;
  std::list<std::weak_ptr<Connection>>::iterator idle_pos_ GUARDED_BY(server_->idle_mu);
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_CONNECTION_H_
