#include "server/client/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cctype>
#include <charconv>
#include <chrono>

namespace server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

std::optional<int64_t> RetryAfterSeconds(std::string_view v) {
  int64_t s = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), s);
  if (ec != std::errc() || end != v.data() + v.size() || s < 0) return std::nullopt;
  return s;
}

// Runs the io_context until the operation in flight ends, or `deadline`
// passes: then the stream is closed and the operation fails.
void RunUntil(boost::asio::io_context& io, beast::tcp_stream& stream,
              std::chrono::steady_clock::time_point deadline) {
  io.restart();
  io.run_until(deadline);
  if (!io.stopped()) {
    stream.socket().close();
    io.run();
  }
}

}  // namespace

bool ParseHttpUrl(std::string_view text, HttpUrl* url, std::string* error) {
  if (base::ParseHttpUrl(text, /*https=*/false, url, error)) return true;
  *error = "'" + std::string(text) + "' is not http://HOST[:PORT][/PATH]: " + *error;
  return false;
}

HttpReply SendHttp(const HttpUrl& url, const HttpCall& call) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(call.timeout_ms);
  boost::asio::io_context io;
  beast::tcp_stream stream(io);
  HttpReply reply;
  beast::error_code ec;
  http::request<http::string_body> req{http::string_to_verb(call.method),
                                       call.target.empty() ? url.target : call.target, 11};
  req.set(http::field::host, url.host + ":" + url.port);
  req.set(http::field::connection, "close");
  if (!call.bearer_key.empty()) req.set(http::field::authorization, "Bearer " + call.bearer_key);
  if (!call.body.empty()) req.set(http::field::content_type, "application/json");
  req.body() = call.body;
  req.prepare_payload();
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  tcp::resolver resolver(io);
  resolver.async_resolve(url.host, url.port, [&](beast::error_code e, tcp::resolver::results_type r) {
    if (e) { ec = e; return; }
    stream.async_connect(r, [&](beast::error_code e2, const tcp::endpoint&) {
      if (e2) { ec = e2; return; }
      http::async_write(stream, req, [&](beast::error_code e3, size_t) {
        if (e3) { ec = e3; return; }
        http::async_read(stream, buffer, res, [&](beast::error_code e4, size_t) { ec = e4; });
      });
    });
  });
  RunUntil(io, stream, deadline);
  if (std::chrono::steady_clock::now() >= deadline && ec) {
    reply.error = "no answer within " + std::to_string(call.timeout_ms) + " ms";
    return reply;
  }
  if (ec) {
    reply.error = ec.message();
    return reply;
  }
  reply.status = static_cast<int>(res.result_int());
  reply.body = std::move(res.body());
  if (auto it = res.find(http::field::retry_after); it != res.end()) {
    reply.retry_after_s = RetryAfterSeconds(it->value());
  }
  return reply;
}

std::string PathSegment(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace server
