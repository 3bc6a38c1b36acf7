#ifndef EDGEALLOC_BASE_JSON_STRING_H_
#define EDGEALLOC_BASE_JSON_STRING_H_

#include <string>
#include <string_view>

namespace base {

// Appends `s` to `*out` as a JSON string literal, quotes included: quote and
// backslash escaped, control characters as \u00XX, and each byte that starts
// no well-formed UTF-8 sequence as \ufffd, so the text is always valid JSON
// whatever bytes a name holds. For the parts that write JSON without a JSON
// library (kvmirror/); server/ uses nlohmann/json.
void AppendJsonString(std::string_view s, std::string* out);

}  // namespace base

#endif  // EDGEALLOC_BASE_JSON_STRING_H_
