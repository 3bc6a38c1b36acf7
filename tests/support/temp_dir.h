#ifndef EDGEALLOC_TESTS_SUPPORT_TEMP_DIR_H_
#define EDGEALLOC_TESTS_SUPPORT_TEMP_DIR_H_

#include <string>

namespace testing {

// A TempDir is a fresh folder under $TMPDIR (or /tmp), removed with all it
// holds when the object dies. Tests keep real database files there (WAL on),
// never :memory:, since locking and WAL are what they test.
class TempDir {
 public:
  TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }
  // path() + "/" + name
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace testing

#endif  // EDGEALLOC_TESTS_SUPPORT_TEMP_DIR_H_
