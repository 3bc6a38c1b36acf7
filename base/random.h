#ifndef EDGEALLOC_BASE_RANDOM_H_
#define EDGEALLOC_BASE_RANDOM_H_

#include <cstddef>
#include <string>

namespace base {

// Fills buf[0, n) with bytes from the kernel's CSPRNG, getrandom(2), going on
// after a short read or EINTR. Returns true, or false with *error naming the
// failure if the kernel has none (ENOSYS) or refuses; never falls back to a
// weaker generator. For ids that must not be guessed. Safe from any thread.
bool KernelRandomBytes(void* buf, size_t n, std::string* error);

}  // namespace base

#endif  // EDGEALLOC_BASE_RANDOM_H_
