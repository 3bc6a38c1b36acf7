#include "server/http/front_rules.h"

#include <boost/asio/ip/address.hpp>
#include <boost/beast/core/string.hpp>

#include <iterator>

namespace server {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool IsDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// The characters of RFC 3986's host and port: unreserved, pct-encoded,
// sub-delims, ':' and the brackets of an IP literal.
bool IsHostChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("-._~%!$&'()*+,;=:[]").find(c) != std::string_view::npos;
}

bool IsLoopbackLiteral(std::string_view text, bool v6) {
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(std::string(text), ec);
  if (ec || address.is_v6() != v6) return false;
  if (address.is_v4()) return address.to_v4().is_loopback();
  const auto a6 = address.to_v6();
  return a6.is_loopback() ||
         (a6.is_v4_mapped() &&
          boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a6).is_loopback());
}

}  // namespace

std::string HostFieldProblem(const Request& header) {
  auto [first, last] = header.equal_range(http::field::host);
  const auto lines = std::distance(first, last);
  if (lines == 0) {
    // HTTP/1.0 had no Host; RFC 9112 asks it of HTTP/1.1 requests only.
    return header.version() >= 11 ? "an HTTP/1.1 request must carry a Host field (RFC 9112 §3.2)"
                                  : "";
  }
  if (lines > 1) return "a request must carry one Host field, not " + std::to_string(lines);
  for (char c : Trim(first->value())) {
    if (!IsHostChar(c)) return "the Host field is not a host and port";
  }
  return "";
}

bool IsLoopbackHost(std::string_view host) {
  host = Trim(host);
  std::string_view name = host;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    const std::string_view rest = host.substr(close + 1);
    if (!rest.empty() && !(rest.front() == ':' && IsDigits(rest.substr(1)))) return false;
    return IsLoopbackLiteral(host.substr(1, close - 1), /*v6=*/true);
  }
  const size_t colon = host.rfind(':');
  if (colon != std::string_view::npos) {
    if (!IsDigits(host.substr(colon + 1))) return false;
    name = host.substr(0, colon);
  }
  if (boost::beast::iequals(name, "localhost")) return true;
  return IsLoopbackLiteral(name, /*v6=*/false);
}

std::optional<Response> OpenModeRefusal(const Request& header) {
  const auto host = header.find(http::field::host);
  if (host != header.end() && !IsLoopbackHost(host->value())) {
    return ErrorResponse(ApiError::kHostNotAllowed,
                     "without a keys file the server answers only requests for a loopback host "
                     "(localhost, 127.0.0.1, [::1]); start it with --keys-file to serve others");
  }
  const auto origin = header.find(http::field::origin);
  if (origin != header.end()) {
    const bool own = host != header.end() &&
                     boost::beast::iequals(Trim(origin->value()),
                                           "http://" + std::string(Trim(host->value())));
    if (!own) {
      return ErrorResponse(ApiError::kCrossOrigin,
                       "without a keys file the server answers no request from another origin "
                       "(a web page's); start it with --keys-file to serve them");
    }
  }
  const std::string_view site = Trim(header["Sec-Fetch-Site"]);
  if (!site.empty() && !boost::beast::iequals(site, "same-origin") &&
      !boost::beast::iequals(site, "none")) {
    return ErrorResponse(ApiError::kCrossOrigin,
                     "without a keys file the server answers no request a web page of another "
                     "site made (Sec-Fetch-Site); start it with --keys-file to serve them");
  }
  return std::nullopt;
}

bool HasBody(const Request& header) {
  if (!header.body().empty()) return true;
  if (header.find(http::field::transfer_encoding) != header.end()) return true;
  const std::string_view length = Trim(header[http::field::content_length]);
  return !length.empty() && length.find_first_not_of('0') != std::string_view::npos;
}

std::optional<Response> ContentTypeRefusal(const Request& header) {
  if (!HasBody(header)) return std::nullopt;
  std::string_view type = header[http::field::content_type];
  type = Trim(type.substr(0, type.find(';')));
  if (boost::beast::iequals(type, "application/json")) return std::nullopt;
  return ErrorResponse(ApiError::kUnsupportedMediaType,
                       type.empty() ? "a request body must be JSON, sent with Content-Type: "
                                      "application/json; this one has no Content-Type"
                                    : "a request body must be JSON, sent with Content-Type: "
                                      "application/json; this one's is another");
}

}  // namespace server
