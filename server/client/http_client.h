#ifndef EDGEALLOC_SERVER_CLIENT_HTTP_CLIENT_H_
#define EDGEALLOC_SERVER_CLIENT_HTTP_CLIENT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/http_url.h"

namespace server {

// A plain-HTTP address, `http://HOST[:PORT][/PATH]` (no TLS: the server
// speaks plain HTTP, and a sidecar talks to it on a private network).
using HttpUrl = base::HttpUrl;

// Parses `text` (base::ParseHttpUrl, http:// only); false with *error
// naming the text and saying why if it is not an http:// URL.
bool ParseHttpUrl(std::string_view text, HttpUrl* url, std::string* error);

// What came back: a status, or none and why (connection refused, timeout).
struct HttpReply {
  int status = 0;  // 0: no answer, see `error`
  std::string body;
  std::optional<int64_t> retry_after_s;  // Retry-After in seconds, when sent
  std::string error;
  bool answered() const { return status != 0; }
};

struct HttpCall {
  std::string method = "GET";
  std::string target;        // overrides the URL's target when not empty
  std::string bearer_key;    // Authorization: Bearer, when not empty
  std::string body;          // sent as application/json when not empty
  int64_t timeout_ms = 5000;  // connect, send and read, all together
};

// One request on a new connection, synchronously (Boost.Beast), the
// connection closed after: a client that calls now and then needs no pool.
HttpReply SendHttp(const HttpUrl& url, const HttpCall& call);

// `s` percent-encoded for one path segment (an id in /v1/containers/{id}).
std::string PathSegment(std::string_view s);

}  // namespace server

#endif  // EDGEALLOC_SERVER_CLIENT_HTTP_CLIENT_H_
