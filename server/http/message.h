#ifndef EDGEALLOC_SERVER_HTTP_MESSAGE_H_
#define EDGEALLOC_SERVER_HTTP_MESSAGE_H_

#include <boost/beast/http.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "server/http/error_table.h"

namespace server {

namespace http = boost::beast::http;

// The request and response of one HTTP exchange, as the server reads and
// writes them and as the router and handlers see them.

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

// Hands the response of one request back to its connection. Safe to call from
// any thread (an io thread or a store writer thread): it only posts to the
// connection's executor. Only the first call counts.
using Reply = std::function<void(Response)>;

// A test, callable from any thread, that turns true once the client of a
// request has closed its connection (or it failed) before the reply. A client
// that sends its next request before the reply (pipelining) is taken as
// still there.
using ClientGone = std::function<bool()>;

// Starts watching a request's connection and returns its ClientGone; for a
// handler whose reply may take long (a claim that waits for a container).
// The connection hands one to the handler of each request it reads. Call it
// only while that handler runs, on its io thread (the watch is armed on the
// connection's strand); an empty one (no connection: tests, the fuzzer)
// means nobody watches.
using ClientGoneWatch = std::function<ClientGone()>;

// Moves the deadline of a request (HttpServerOptions::request_deadline)
// later by the time given, for a handler that means to wait before it
// answers (a claim's wait_ms). Call it only while that handler runs, on its
// io thread; later calls change nothing. An empty one (no connection)
// means no deadline.
using ExtendDeadline = std::function<void(std::chrono::milliseconds)>;

// Answers one request. It may answer before returning or later, from any
// thread, and must call `reply` once; one that has not by the request's
// deadline is answered 503 unavailable for it, and its late call is
// dropped.
using Handler = std::function<void(Request, Reply, ClientGoneWatch, ExtendDeadline)>;

// What a server's Admitter (below) says of a
// request once its header is read and before any of its body is: refused
// (answered at once; its body is never read), or let in with the most body
// it may have and the handler that answers it once that body is read.
struct Admission {
  std::optional<Response> refusal;
  // A body over it is 413 body_too_large (the server's own limit holds too).
  uint64_t max_body_bytes = std::numeric_limits<uint64_t>::max();
  Handler handler;  // set unless refused
};

// Looks at a request's header before its body is read: the Router
// (router.h), or a test's own. Called once for every request, on an io
// thread, from every io thread at once.
class Admitter {
 public:
  virtual ~Admitter() = default;
  virtual Admission Admit(const Request& header) const = 0;
};

// A response with a JSON body (which the caller made valid JSON).
Response JsonResponse(int status, std::string body);

// The response of `error` (its row of the error table: status and code)
// with `message`: {"error":{"code":...,"message":...}}, application/json;
// 503s carry Retry-After: 1. `more_fields` (JSON members, each led by a
// comma) follow the message: what an error says beyond its code.
Response ErrorResponse(ApiError error, std::string_view message,
                       std::string_view more_fields = {});

// A JSON string literal for `s`, quotes included; invalid UTF-8 is replaced.
std::string JsonQuote(std::string_view s);

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_MESSAGE_H_
