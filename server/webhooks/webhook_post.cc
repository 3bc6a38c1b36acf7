#include "server/webhooks/webhook_post.h"

#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <functional>
#include <optional>

namespace server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// Runs `io` until `done`, `deadline` or *cancel; false if it was cut short
// (then `close` has been called and the operations in flight have ended).
bool RunUntil(boost::asio::io_context& io, const bool& done, Clock::time_point deadline,
              const std::atomic<bool>* cancel, const std::function<void()>& close) {
  while (!done) {
    const auto slice = std::min(deadline, Clock::now() + std::chrono::milliseconds(100));
    io.restart();
    io.run_until(slice);
    if (done) break;
    if (Clock::now() >= deadline || (cancel != nullptr && cancel->load())) {
      close();
      io.restart();
      io.run();
      return false;
    }
  }
  return true;
}

// One exchange on a stream (plain or TLS) already connected.
template <typename Stream>
WebhookAnswer Exchange(boost::asio::io_context& io, Stream& stream,
                       http::request<http::string_body>& req, const WebhookPostOptions& options,
                       const std::atomic<bool>* cancel, const std::function<void()>& close) {
  WebhookAnswer answer;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(options.max_answer_bytes);
  beast::error_code ec;
  bool done = false;
  http::async_write(stream, req, [&](beast::error_code e, size_t) {
    if (e) {
      ec = e;
      done = true;
      return;
    }
    http::async_read(stream, buffer, parser, [&](beast::error_code e2, size_t) {
      ec = e2;
      done = true;
    });
  });
  const auto deadline = Clock::now() + std::chrono::milliseconds(options.response_timeout_ms);
  if (!RunUntil(io, done, deadline, cancel, close)) {
    answer.error = "no answer within " + std::to_string(options.response_timeout_ms) + " ms";
    return answer;
  }
  if (ec) {
    answer.error = ec.message();
    return answer;
  }
  answer.status = static_cast<int>(parser.get().result_int());
  return answer;
}

}  // namespace

bool ParseWebhookUrl(std::string_view text, WebhookUrl* url, std::string* error) {
  if (base::ParseHttpUrl(text, /*https=*/true, url, error)) return true;
  *error = "a webhook URL is http[s]://HOST[:PORT][/PATH]: " + *error;
  return false;
}

WebhookAnswer PostWebhook(const WebhookUrl& url,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          const std::string& body, const WebhookPostOptions& options,
                          const std::atomic<bool>* cancel) {
  http::request<http::string_body> req{http::verb::post, url.target, 11};
  req.set(http::field::host, url.host);
  req.set(http::field::user_agent, "edgealloc-webhook");
  req.set(http::field::content_type, "application/json");
  req.set(http::field::connection, "close");
  for (const auto& [name, value] : headers) req.set(name, value);
  req.body() = body;
  req.prepare_payload();

  boost::asio::io_context io;
  ssl::context ctx(ssl::context::tls_client);
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  std::optional<beast::tcp_stream> plain;
  if (url.tls) {
    ctx.set_default_verify_paths();  // the system's store; SSL_CERT_FILE/DIR override it
    ctx.set_verify_mode(ssl::verify_peer);
    tls.emplace(io, ctx);
    tls->set_verify_callback(ssl::host_name_verification(url.host));
    SSL_set_tlsext_host_name(tls->native_handle(), url.host.c_str());  // SNI
  } else {
    plain.emplace(io);
  }
  beast::tcp_stream& socket = url.tls ? beast::get_lowest_layer(*tls) : *plain;
  const std::function<void()> close = [&socket] { socket.socket().close(); };

  WebhookAnswer answer;
  beast::error_code ec;
  bool done = false;
  tcp::resolver resolver(io);
  resolver.async_resolve(url.host, url.port, [&](beast::error_code e, tcp::resolver::results_type r) {
    if (e) {
      ec = e;
      done = true;
      return;
    }
    socket.async_connect(r, [&](beast::error_code e2, const tcp::endpoint&) {
      if (e2 || !url.tls) {
        ec = e2;
        done = true;
        return;
      }
      tls->async_handshake(ssl::stream_base::client, [&](beast::error_code e3) {
        ec = e3;
        done = true;
      });
    });
  });
  const auto deadline = Clock::now() + std::chrono::milliseconds(options.connect_timeout_ms);
  if (!RunUntil(io, done, deadline, cancel, [&] {
        resolver.cancel();
        close();
      })) {
    answer.error = "not connected within " + std::to_string(options.connect_timeout_ms) + " ms";
    return answer;
  }
  if (ec) {
    answer.error = "cannot connect: " + ec.message();
    return answer;
  }
  return url.tls ? Exchange(io, *tls, req, options, cancel, close)
                 : Exchange(io, *plain, req, options, cancel, close);
}

}  // namespace server
