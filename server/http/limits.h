#ifndef EDGEALLOC_SERVER_HTTP_LIMITS_H_
#define EDGEALLOC_SERVER_HTTP_LIMITS_H_

#include <chrono>
#include <cstddef>

namespace server {

// The fixed limits of every HTTP connection. HttpServer states them as its
// own (server.h); each Connection keeps them.
struct ConnectionLimits {
  // Request line and headers at most; more is 431 headers_too_large.
  static constexpr size_t kHeaderLimitBytes = 8 * 1024;
  // A keep-alive connection idle this long, or a client this slow to send
  // its headers or body, is closed, so slow clients cannot hold the server.
  static constexpr std::chrono::seconds kReadTimeout{30};
  static constexpr std::chrono::seconds kWriteTimeout{30};
  // After refusing a request (413, 431, 400) with Connection: close, the rest
  // of what the client sends is read and dropped for at most this long and
  // this much, so that it reads our answer instead of a reset.
  static constexpr std::chrono::seconds kDrainTimeout{5};
  static constexpr size_t kMaxDrainBytes = 64 << 20;
  // A warning about connections (accept errors, the cap reached with none
  // idle) is logged at most once per this interval.
  static constexpr std::chrono::seconds kWarningInterval{10};
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_LIMITS_H_
