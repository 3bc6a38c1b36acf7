#include "server/listen_address.h"

#include <arpa/inet.h>

#include <charconv>

namespace server {

bool SplitHostPort(const std::string& listen, std::string* host, uint16_t* port,
                   std::string* error) {
  std::string h, p;
  if (!listen.empty() && listen[0] == '[') {
    size_t close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      *error = "'" + listen + "' is not [IPv6]:PORT";
      return false;
    }
    h = listen.substr(1, close - 1);
    p = listen.substr(close + 2);
  } else {
    size_t colon = listen.rfind(':');
    if (colon == std::string::npos || listen.find(':') != colon) {
      *error = "'" + listen + "' is not HOST:PORT (write IPv6 as [::1]:8080)";
      return false;
    }
    h = listen.substr(0, colon);
    p = listen.substr(colon + 1);
  }
  int v = -1;
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
  if (h.empty() || p.empty() || ec != std::errc() || end != p.data() + p.size() || v < 0 ||
      v > 65535) {
    *error = "'" + listen + "' is not HOST:PORT with a port in 0..65535";
    return false;
  }
  *host = h;
  *port = static_cast<uint16_t>(v);
  return true;
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    return IN6_IS_ADDR_LOOPBACK(&v6);
  }
  return false;
}

}  // namespace server
