#ifndef EDGEALLOC_BASE_HTTP_URL_H_
#define EDGEALLOC_BASE_HTTP_URL_H_

#include <string>
#include <string_view>

namespace base {

// An http:// or https:// URL as a client connects to it: the client
// commands' and the sidecar's --server and health URLs, and the webhooks'.
struct HttpUrl {
  bool tls = false;          // https://
  std::string host;          // a name or an address; IPv6 without its brackets
  std::string port;          // as given, else 80 (http) or 443 (https)
  std::string target = "/";  // the path and query; "/" when none
};

// Parses `text` (RFC 3986, by Boost.URL): http://, or https:// too when
// `https` is true; a host; a port of 1 to 65535 if one is given; no user
// info (a client here never sends credentials in a URL) and no fragment.
// False with *error saying what is wrong, in words that never quote the
// text (a webhook URL's query may carry a token): a caller names the URL.
bool ParseHttpUrl(std::string_view text, bool https, HttpUrl* url, std::string* error);

}  // namespace base

#endif  // EDGEALLOC_BASE_HTTP_URL_H_
