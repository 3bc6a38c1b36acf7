#ifndef EDGEALLOC_TESTS_SUPPORT_HTTP_CLIENT_H_
#define EDGEALLOC_TESTS_SUPPORT_HTTP_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

namespace testing {

// One HTTP response as a test sees it; header names are lower case.
struct HttpReply {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;
  // The header's value, or "" if absent. `name` in lower case.
  std::string Header(const std::string& name) const;
  // error.code of an API error body, or "" if the body is not one.
  std::string ErrorCode() const;
};

// Thrown when a connect, write or read of HttpClient took longer than its
// timeout. The connection is closed; nothing is retried.
class HttpTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A small synchronous HTTP/1.1 client over one keep-alive connection to
// 127.0.0.1:port, reconnecting when the server closed it. For tests; one
// thread at a time. Throws std::exception on network failures (HttpTimeout
// when one step took longer than timeout(), 30 s unless set).
class HttpClient {
 public:
  explicit HttpClient(uint16_t port, std::string key = "");
  ~HttpClient();

  // Bounds each step of a request (connect, write, read of the reply); a
  // request that breaks on a reused keep-alive connection is sent once more,
  // one that times out is not.
  void set_timeout(std::chrono::milliseconds timeout);
  std::chrono::milliseconds timeout() const;

  HttpReply Request(const std::string& method, const std::string& target,
                    const std::string& body = "",
                    const std::map<std::string, std::string>& headers = {});
  HttpReply Get(const std::string& target) { return Request("GET", target); }
  HttpReply Post(const std::string& target, const std::string& body) {
    return Request("POST", target, body);
  }
  HttpReply Delete(const std::string& target) { return Request("DELETE", target); }

  // Writes `bytes` as they are on a fresh connection and reads one response.
  HttpReply Raw(const std::string& bytes);

  // Writes `bytes` on a fresh connection and returns every byte the server
  // sends until it closes the connection or `wait` passes: to count the
  // responses to one write, or to read a HEAD response.
  std::string RawTranscript(const std::string& bytes,
                            std::chrono::milliseconds wait = std::chrono::seconds(2));

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace testing

#endif  // EDGEALLOC_TESTS_SUPPORT_HTTP_CLIENT_H_
