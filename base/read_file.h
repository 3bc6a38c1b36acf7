#ifndef EDGEALLOC_BASE_READ_FILE_H_
#define EDGEALLOC_BASE_READ_FILE_H_

#include <fstream>
#include <sstream>
#include <string>

namespace base {

// Reads the whole file at `path`, as bytes, into *out; false (and *out
// untouched) when it cannot be opened.
inline bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream text;
  text << in.rdbuf();
  *out = text.str();
  return true;
}

}  // namespace base

#endif  // EDGEALLOC_BASE_READ_FILE_H_
