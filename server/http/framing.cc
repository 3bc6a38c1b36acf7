#include "server/http/framing.h"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <vector>

namespace server {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

}  // namespace

Framing CheckTransferEncoding(const Request& req, std::string* why) {
  auto [first, last] = req.equal_range(http::field::transfer_encoding);
  if (first == last) return Framing::kOk;
  std::vector<std::string> codings;
  for (auto it = first; it != last; ++it) {
    std::string_view value = it->value();
    size_t i = 0;
    while (i <= value.size()) {
      size_t comma = std::min(value.find(',', i), value.size());
      std::string_view item = value.substr(i, comma - i);
      while (!item.empty() && IsSpace(item.front())) item.remove_prefix(1);
      while (!item.empty() && IsSpace(item.back())) item.remove_suffix(1);
      if (!item.empty()) {
        std::string coding(item);
        std::transform(coding.begin(), coding.end(), coding.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        codings.push_back(std::move(coding));
      }
      i = comma + 1;
    }
  }
  if (codings.empty() || codings.back() != "chunked") {
    *why = "Transfer-Encoding must end in chunked; the body's length cannot be known";
    return Framing::kBad;
  }
  if (std::count(codings.begin(), codings.end(), "chunked") > 1) {
    *why = "Transfer-Encoding names chunked more than once";
    return Framing::kBad;
  }
  if (req.find(http::field::content_length) != req.end()) {
    *why = "a request must not have both Transfer-Encoding and Content-Length";
    return Framing::kBad;
  }
  if (codings.size() > 1) {
    *why = "Transfer-Encoding " + codings.front() + " is not supported; only chunked is";
    return Framing::kUnsupported;
  }
  return Framing::kOk;
}

}  // namespace server
