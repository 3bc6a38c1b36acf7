#include "server/api/list_query.h"

#include <cstdint>
#include <string>

#include "server/http/error_table.h"

namespace server {
namespace {

constexpr std::string_view kCursorPrefix = "c1.";
constexpr char kHex[] = "0123456789abcdef";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool CursorFail(BodyError* error, const std::string& why) {
  *error = {CodeOf(ApiError::kInvalidField), "cursor: " + why};
  return false;
}

}  // namespace

uint64_t ListFingerprint(std::initializer_list<std::string_view> parts) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64
  for (std::string_view part : parts) {
    for (unsigned char c : part) {
      h ^= c;
      h *= 1099511628211ull;
    }
    // A separator no filter value holds once decoded as UTF-8 text, so that
    // ("ab", "c") and ("a", "bc") differ.
    h ^= 0xff;
    h *= 1099511628211ull;
  }
  return h;
}

std::string MakeCursor(uint64_t fingerprint, std::string_view last_key) {
  std::string out(kCursorPrefix);
  out.reserve(kCursorPrefix.size() + 17 + 2 * last_key.size());
  for (int shift = 60; shift >= 0; shift -= 4) out += kHex[(fingerprint >> shift) & 0xf];
  out += '.';
  for (unsigned char c : last_key) {
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
  }
  return out;
}

bool ParseListPage(const std::string* limit_param, const std::string* cursor_param,
                   uint64_t fingerprint, int* limit, std::string* after, BodyError* error) {
  *limit = kDefaultListLimit;
  after->clear();
  if (limit_param != nullptr) {
    int64_t n = 0;
    if (!ParseInt64(*limit_param, &n) || n < 1 || n > kMaxListLimit) {
      *error = {CodeOf(ApiError::kInvalidField),
                "limit: must be an integer from 1 to " + std::to_string(kMaxListLimit)};
      return false;
    }
    *limit = static_cast<int>(n);
  }
  if (cursor_param == nullptr) return true;
  const std::string& c = *cursor_param;
  // "c1." + 16 hex digits + "." + an even number of hex digits, at least 2.
  const size_t key_at = kCursorPrefix.size() + 17;
  if (c.size() < key_at + 2 || c.compare(0, kCursorPrefix.size(), kCursorPrefix) != 0 ||
      c[key_at - 1] != '.' || (c.size() - key_at) % 2 != 0) {
    return CursorFail(error, "is not a cursor this server made (take next_cursor as it is)");
  }
  uint64_t fp = 0;
  for (size_t i = kCursorPrefix.size(); i < key_at - 1; ++i) {
    const int v = HexValue(c[i]);
    if (v < 0) return CursorFail(error, "is not a cursor this server made");
    fp = (fp << 4) | static_cast<uint64_t>(v);
  }
  std::string key;
  key.reserve((c.size() - key_at) / 2);
  for (size_t i = key_at; i < c.size(); i += 2) {
    const int hi = HexValue(c[i]), lo = HexValue(c[i + 1]);
    if (hi < 0 || lo < 0) return CursorFail(error, "is not a cursor this server made");
    key += static_cast<char>(hi << 4 | lo);
  }
  if (fp != fingerprint) {
    return CursorFail(error,
                      "belongs to another query (the same list and filters must be asked for "
                      "every page)");
  }
  *after = std::move(key);
  return true;
}

bool ParseLabelFilter(std::string_view param, std::string* key, std::string* value,
                      BodyError* error) {
  const size_t colon = param.find(':');
  if (colon == std::string_view::npos) {
    *error = {CodeOf(ApiError::kInvalidField), "label: must be KEY:VALUE"};
    return false;
  }
  const std::string_view k = param.substr(0, colon), v = param.substr(colon + 1);
  const size_t kn = Utf8Chars(k);
  if (kn < 1 || kn > kMaxLabelKeyChars) {
    *error = {CodeOf(ApiError::kInvalidField), "label: the key must be 1 to " +
                                   std::to_string(kMaxLabelKeyChars) + " characters long"};
    return false;
  }
  if (Utf8Chars(v) > kMaxLabelValueChars) {
    *error = {CodeOf(ApiError::kInvalidField), "label: the value must be at most " +
                                   std::to_string(kMaxLabelValueChars) + " characters long"};
    return false;
  }
  // As a claim's labels (ParseClaim): PostgreSQL text cannot hold NUL, and
  // such a filter made every list fail there with 503.
  if (HasNul(k) || HasNul(v)) {
    *error = {CodeOf(ApiError::kInvalidField), "label: the key and value must not contain U+0000 (NUL)"};
    return false;
  }
  key->assign(k);
  value->assign(v);
  return true;
}

}  // namespace server
