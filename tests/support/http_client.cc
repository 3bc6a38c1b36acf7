#include "tests/support/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <optional>

namespace testing {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

std::string HttpReply::Header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

std::string HttpReply::ErrorCode() const {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("error")) return "";
  return j["error"].value("code", "");
}

struct HttpClient::Impl {
  uint16_t port;
  std::string key;
  net::io_context ioc;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;

  std::chrono::milliseconds timeout{std::chrono::seconds(30)};

  // Runs one asynchronous step under the stream's expiry: beast's
  // tcp_stream enforces expires_after on asynchronous operations only (a
  // synchronous read would wait for ever on a server that never answers).
  // Throws HttpTimeout when the expiry passed, system_error on other errors.
  template <typename Start>
  void RunStep(Start start) {
    beast::error_code result = net::error::would_block;
    stream->expires_after(timeout);
    start([&result](beast::error_code ec, auto&&...) { result = ec; });
    ioc.restart();
    ioc.run();
    if (result == beast::error::timeout) {
      Close();
      throw HttpTimeout("HTTP request to 127.0.0.1:" + std::to_string(port) + " timed out after " +
                        std::to_string(timeout.count()) + " ms");
    }
    if (result) throw beast::system_error(result);
  }

  beast::tcp_stream& Connect() {
    if (!stream) {
      stream.emplace(ioc);
      buffer.clear();
      const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), port);
      RunStep([&](auto handler) { stream->async_connect(endpoint, std::move(handler)); });
    }
    return *stream;
  }

  void Close() {
    if (stream) {
      beast::error_code ignored;
      stream->socket().close(ignored);
      stream.reset();
    }
  }

  HttpReply ReadReply() {
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    RunStep([&](auto handler) { http::async_read(*stream, buffer, parser, std::move(handler)); });
    auto& res = parser.get();
    HttpReply reply;
    reply.status = static_cast<int>(res.result_int());
    reply.body = res.body();
    for (const auto& field : res) {
      std::string name(field.name_string());
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      reply.headers[name] = std::string(field.value());
    }
    if (!res.keep_alive()) Close();
    return reply;
  }
};

HttpClient::HttpClient(uint16_t port, std::string key) : impl_(std::make_unique<Impl>()) {
  impl_->port = port;
  impl_->key = std::move(key);
}

HttpClient::~HttpClient() { impl_->Close(); }

void HttpClient::set_timeout(std::chrono::milliseconds timeout) { impl_->timeout = timeout; }
std::chrono::milliseconds HttpClient::timeout() const { return impl_->timeout; }

HttpReply HttpClient::Request(const std::string& method, const std::string& target,
                              const std::string& body,
                              const std::map<std::string, std::string>& headers) {
  for (int attempt = 0;; ++attempt) {
    try {
      beast::tcp_stream& stream = impl_->Connect();
      http::request<http::string_body> req{http::string_to_verb(method), target, 11};
      req.set(http::field::host, "127.0.0.1");
      if (!impl_->key.empty()) req.set(http::field::authorization, "Bearer " + impl_->key);
      if (!body.empty()) req.set(http::field::content_type, "application/json");
      for (const auto& [name, value] : headers) req.set(name, value);
      req.body() = body;
      req.prepare_payload();
      impl_->RunStep([&](auto handler) { http::async_write(stream, req, std::move(handler)); });
      return impl_->ReadReply();
    } catch (const HttpTimeout&) {
      throw;  // the server may be working on it: not sent again
    } catch (const std::exception&) {
      // A keep-alive connection the server closed meanwhile: retry once.
      impl_->Close();
      if (attempt > 0) throw;
    }
  }
}

HttpReply HttpClient::Raw(const std::string& bytes) {
  impl_->Close();
  beast::tcp_stream& stream = impl_->Connect();
  net::write(stream.socket(), net::buffer(bytes));
  HttpReply reply = impl_->ReadReply();
  impl_->Close();
  return reply;
}

std::string HttpClient::RawTranscript(const std::string& bytes, std::chrono::milliseconds wait) {
  impl_->Close();
  beast::tcp_stream& stream = impl_->Connect();
  net::write(stream.socket(), net::buffer(bytes));
  std::string out;
  char chunk[4096];
  stream.expires_after(wait);
  for (;;) {
    beast::error_code ec;
    size_t n = stream.read_some(net::buffer(chunk), ec);
    out.append(chunk, n);
    if (ec) break;  // closed by the server, reset, or `wait` passed
  }
  impl_->Close();
  return out;
}

}  // namespace testing
