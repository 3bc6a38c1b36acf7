#include "server/http/target.h"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

namespace server {
namespace urls = boost::urls;
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%' && i + 2 < s.size()) {
      int hi = HexValue(s[i + 1]), lo = HexValue(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_is_space && c == '+' ? ' ' : c);
  }
  return out;
}

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= path.size()) {
    size_t slash = path.find('/', i);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > i) parts.push_back(PercentDecode(path.substr(i, slash - i), false));
    i = slash + 1;
  }
  return parts;
}

bool ParseTarget(std::string_view target, Target* out, std::string* error) {
  boost::system::result<urls::url_view> url;
  if (!target.empty() && target.front() == '/') {
    url = urls::parse_origin_form(target);
  } else {
    url = urls::parse_absolute_uri(target);
    if (url && url->scheme_id() != urls::scheme::http && url->scheme_id() != urls::scheme::https) {
      *error = "the request target's scheme must be http or https";
      return false;
    }
  }
  if (!url) {
    *error = "malformed request target (" + url.error().message() +
             "): a path starting with /, or an absolute http URL, with valid %XX escapes";
    return false;
  }
  out->segments.clear();
  for (std::string segment : url->segments()) {  // decoded
    // A segment becomes an id, which PostgreSQL text cannot hold with a NUL
    // in it (libpq would cut it there: c-1%00x read or removed as c-1).
    if (segment.find('\0') != std::string::npos) {
      *error = "the request target's path may not hold %00 (U+0000)";
      return false;
    }
    if (!segment.empty()) out->segments.push_back(std::move(segment));
  }
  out->query = url->has_query() ? std::string(url->encoded_query()) : std::string();
  return true;
}

}  // namespace server
