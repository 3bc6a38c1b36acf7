#include "base/random.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

namespace base {

bool KernelRandomBytes(void* buf, size_t n, std::string* error) {
  auto* p = static_cast<unsigned char*>(buf);
  while (n > 0) {
    // Flags 0: the urandom pool, blocking only until it is first seeded at
    // boot. Reads of up to 256 bytes are never short, but a longer one, or
    // one interrupted by a signal, may be.
    ssize_t got = getrandom(p, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      *error = std::string("getrandom(2) failed: ") + std::strerror(errno);
      return false;
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

}  // namespace base
