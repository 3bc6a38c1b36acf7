#ifndef EDGEALLOC_BASE_NEAREST_WORD_H_
#define EDGEALLOC_BASE_NEAREST_WORD_H_

#include <string>
#include <string_view>
#include <vector>

namespace base {

// The word of `known` nearest to `word` by edit distance, if it is near
// enough to be a typo of it (at most a third of its letters off); else "".
// What a mistyped flag (server/usage_hints.h) or body field
// (server/api/request_bodies.h) is told it may have meant.
std::string NearestWord(std::string_view word, const std::vector<std::string>& known);

}  // namespace base

#endif  // EDGEALLOC_BASE_NEAREST_WORD_H_
