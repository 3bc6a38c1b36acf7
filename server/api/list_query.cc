#include "server/api/list_query.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include "server/http/error_table.h"

namespace server {
namespace {

constexpr std::string_view kCursorPrefix = "c2.";
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

std::string MakeCursor(const CursorKey& key, uint64_t fingerprint, std::string_view last_key) {
  std::string out(kCursorPrefix);
  out.reserve(kCursorPrefix.size() + 18 + 2 * last_key.size() + 2 * CursorKey::kTagBytes);
  for (int shift = 60; shift >= 0; shift -= 4) out += kHex[(fingerprint >> shift) & 0xf];
  out += '.';
  for (unsigned char c : last_key) {
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
  }
  // The signature covers everything before it: prefix, fingerprint and key.
  const std::array<uint8_t, CursorKey::kTagBytes> tag = key.Tag(out);
  out += '.';
  for (uint8_t c : tag) {
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
  }
  return out;
}

namespace {

// Hex digits to bytes; false if `hex` is not an even number of lowercase digits.
bool FromHex(std::string_view hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  out->clear();
  out->reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = HexValue(hex[i]), lo = HexValue(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    *out += static_cast<char>(hi << 4 | lo);
  }
  return true;
}

// "c2." + 16 hex digits + "." + 2 or more hex digits + "." + the tag's hex,
// its tag good under `key`: *fingerprint and *after set.
bool ParseCursor(const std::string& c, const CursorKey& key, uint64_t* fingerprint,
                 std::string* after) {
  const size_t key_at = kCursorPrefix.size() + 17;
  const size_t tag_hex = 2 * CursorKey::kTagBytes;
  if (c.size() < key_at + 2 + 1 + tag_hex || c.compare(0, kCursorPrefix.size(), kCursorPrefix) != 0 ||
      c[key_at - 1] != '.' || c[c.size() - tag_hex - 1] != '.') {
    return false;
  }
  std::string tag_bytes;
  if (!FromHex(std::string_view(c).substr(c.size() - tag_hex), &tag_bytes)) return false;
  std::array<uint8_t, CursorKey::kTagBytes> tag{};
  std::copy(tag_bytes.begin(), tag_bytes.end(), tag.begin());
  const std::string_view signed_part = std::string_view(c).substr(0, c.size() - tag_hex - 1);
  if (!key.Verify(signed_part, tag)) return false;
  // Signed by us, so well formed; checked all the same.
  uint64_t fp = 0;
  for (size_t i = kCursorPrefix.size(); i < key_at - 1; ++i) {
    const int v = HexValue(c[i]);
    if (v < 0) return false;
    fp = (fp << 4) | static_cast<uint64_t>(v);
  }
  if (!FromHex(signed_part.substr(key_at), after) || after->empty()) return false;
  *fingerprint = fp;
  return true;
}

}  // namespace

bool ParseListPage(const std::string* limit_param, const std::string* cursor_param,
                   const CursorKey& key, uint64_t fingerprint, int* limit, std::string* after,
                   BodyError* error) {
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
  uint64_t fp = 0;
  std::string start;
  if (!ParseCursor(*cursor_param, key, &fp, &start)) {
    return CursorFail(error, "is not a cursor this server made (take next_cursor as it is)");
  }
  if (fp != fingerprint) {
    return CursorFail(error,
                      "belongs to another query (the same list and filters must be asked for "
                      "every page)");
  }
  *after = std::move(start);
  return true;
}

bool ParseLabelFilter(std::string_view param, std::string* key, std::string* value,
                      BodyError* error, std::string_view name) {
  auto fail = [&](const std::string& why) {
    *error = {CodeOf(ApiError::kInvalidField), std::string(name) + ": " + why};
    return false;
  };
  const size_t colon = param.find(':');
  if (colon == std::string_view::npos) return fail("must be KEY:VALUE");
  const std::string_view k = param.substr(0, colon), v = param.substr(colon + 1);
  const size_t kn = Utf8Chars(k);
  if (kn < 1 || kn > kMaxLabelKeyChars) {
    return fail("the key must be 1 to " + std::to_string(kMaxLabelKeyChars) +
                " characters long");
  }
  if (Utf8Chars(v) > kMaxLabelValueChars) {
    return fail("the value must be at most " + std::to_string(kMaxLabelValueChars) +
                " characters long");
  }
  // As a claim's labels (ParseClaim): PostgreSQL text cannot hold NUL, and
  // such a filter made every list fail there with 503.
  if (HasNul(k) || HasNul(v)) return fail("the key and value must not contain U+0000 (NUL)");
  key->assign(k);
  value->assign(v);
  return true;
}

}  // namespace server
