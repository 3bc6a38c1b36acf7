#include "base/json_string.h"

#include <catch2/catch.hpp>
#include <string>

namespace base {
namespace {

std::string Json(std::string_view s) {
  std::string out;
  AppendJsonString(s, &out);
  return out;
}

TEST_CASE("json_string: JSON strings escape quote, backslash and control characters") {
  CHECK(Json("chrome") == R"("chrome")");
  CHECK(Json("") == R"("")");
  CHECK(Json(R"(we"ur)") == R"("we\"ur")");
  CHECK(Json(R"(a\b)") == R"("a\\b")");
  CHECK(Json("a\nb\tc\rd") == R"("a\u000ab\u0009c\u000dd")");
  CHECK(Json(std::string("a\0b", 3)) == R"("a\u0000b")");
  CHECK(Json("\x1f\x7f") == "\"\\u001f\x7f\"");  // DEL needs no escape in JSON
  CHECK(Json("a/b<c>") == R"("a/b<c>")");
}

TEST_CASE("json_string: JSON strings keep valid UTF-8 and replace bytes that are not") {
  CHECK(Json("z\xC3\xBCrich") == "\"z\xC3\xBCrich\"");                        // ü, 2 bytes
  CHECK(Json("\xE6\x9D\xB1\xE4\xBA\xAC") == "\"\xE6\x9D\xB1\xE4\xBA\xAC\"");  // 東京
  CHECK(Json("\xF0\x9F\x8C\x8D") == "\"\xF0\x9F\x8C\x8D\"");                  // U+1F30D, 4 bytes
  CHECK(Json("a\xFFz") == R"("a\ufffdz")");                                   // never valid
  CHECK(Json("\xC3") == R"("\ufffd")");                                       // truncated
  CHECK(Json("\xC0\xAF") == R"("\ufffd\ufffd")");                             // overlong '/'
  CHECK(Json("\xED\xA0\x80") == R"("\ufffd\ufffd\ufffd")");                   // a surrogate
  CHECK(Json("\xF4\x90\x80\x80") == R"("\ufffd\ufffd\ufffd\ufffd")");         // above U+10FFFF
}

}  // namespace
}  // namespace base
