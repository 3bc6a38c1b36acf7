#include "base/http_url.h"

#include <boost/url/parse.hpp>
#include <boost/url/scheme.hpp>
#include <boost/url/url_view.hpp>

#include <charconv>

namespace base {

bool ParseHttpUrl(std::string_view text, bool https, HttpUrl* url, std::string* error) {
  namespace urls = boost::urls;
  const auto parsed = urls::parse_absolute_uri(urls::string_view(text.data(), text.size()));
  if (!parsed) {
    *error = "not a URL (scheme://host[:port][/path])";
    return false;
  }
  const urls::url_view u = *parsed;
  // After an authority the path is empty or begins with '/' (RFC 3986,
  // path-abempty); Boost.URL 1.81 reads "http://x:8a" as port 8, path "a".
  if (!u.encoded_path().empty() && u.encoded_path().front() != '/') {
    *error = "not a URL (scheme://host[:port][/path])";
    return false;
  }
  const urls::scheme scheme = u.scheme_id();
  if (scheme != urls::scheme::http && !(https && scheme == urls::scheme::https)) {
    *error = https ? "the scheme is not http:// or https://" : "the scheme is not http://";
    return false;
  }
  if (!u.has_authority() || u.encoded_host().empty()) {
    *error = "no host";
    return false;
  }
  if (u.has_userinfo()) {
    *error = "user info (user@) is not taken";
    return false;
  }
  if (u.host_type() == urls::host_type::ipvfuture) {
    *error = "the host is not a name, an IPv4 or an IPv6 address";
    return false;
  }
  const bool tls = scheme == urls::scheme::https;
  std::string port = tls ? "443" : "80";
  if (u.has_port() && !u.port().empty()) {
    const std::string_view given(u.port().data(), u.port().size());
    int p = 0;
    const auto [end, ec] = std::from_chars(given.data(), given.data() + given.size(), p);
    if (ec != std::errc() || end != given.data() + given.size() || p < 1 || p > 65535) {
      *error = "the port is not 1 to 65535";
      return false;
    }
    port = std::string(given);
  }
  url->tls = tls;
  url->host = u.host_address();
  url->port = std::move(port);
  url->target = u.encoded_path().empty() ? "/" : std::string(u.encoded_path());
  if (u.has_query()) url->target += "?" + std::string(u.encoded_query());
  return true;
}

}  // namespace base
