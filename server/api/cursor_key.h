#ifndef EDGEALLOC_SERVER_API_CURSOR_KEY_H_
#define EDGEALLOC_SERVER_API_CURSOR_KEY_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "store/status.h"

namespace server {

// The secret list cursors are signed with (HMAC-SHA256), so that a cursor
// the server did not make is refused: by default random for this process
// (a cursor then works on the node, and in the run, that made it); read
// from a file (--cursor-secret-file), nodes given the same file accept each
// other's cursors (PostgreSQL nodes behind one load balancer). Immutable;
// safe from any thread.
class CursorKey {
 public:
  // Bytes of the signature a cursor carries (a truncated HMAC-SHA256).
  static constexpr size_t kTagBytes = 16;
  // Least bytes of a secret file.
  static constexpr size_t kMinSecretBytes = 32;

  // A key from the kernel's CSPRNG; IOError if it has none.
  static store::Status Random(CursorKey* out);
  // The secret of `path`: its bytes but for trailing whitespace (a newline
  // an editor added), at least kMinSecretBytes of them; InvalidArgument
  // naming the file if shorter, IOError if it cannot be read.
  static store::Status FromFile(const std::string& path, CursorKey* out);
  // A key of the given secret's bytes (tests).
  explicit CursorKey(std::string_view secret = {}) : secret_(secret) {}

  // The tag of `message` under this key.
  std::array<uint8_t, kTagBytes> Tag(std::string_view message) const;
  // True if `tag` is `message`'s under this key; compared in constant time.
  bool Verify(std::string_view message, const std::array<uint8_t, kTagBytes>& tag) const;

 private:
  std::string secret_;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_CURSOR_KEY_H_
