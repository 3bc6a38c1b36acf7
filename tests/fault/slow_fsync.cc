// A test-only LD_PRELOAD shim that makes fsync, fdatasync and syncfs slow in
// the processes it is loaded into (the nemesis test's PostgreSQL servers).
// The delay, in milliseconds, is read at each call from the file named by
// EDGEALLOC_SLOW_FSYNC_FILE (missing or 0: no delay), so a test switches it
// on and off while the server runs. After the delay the real call is made
// when EDGEALLOC_SLOW_FSYNC_REAL=1; otherwise it returns success without
// syncing: the tests lose no power, and PostgreSQL runs as fast as with
// fsync off while it still makes (and waits for) every call.

#include <dlfcn.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>

namespace {

long DelayMs() {
  const char* path = std::getenv("EDGEALLOC_SLOW_FSYNC_FILE");
  if (path == nullptr) return 0;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[32] = {};
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  return n > 0 ? std::strtol(buf, nullptr, 10) : 0;
}

void Delay() {
  const long ms = DelayMs();
  if (ms <= 0) return;
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

bool Real() {
  const char* real = std::getenv("EDGEALLOC_SLOW_FSYNC_REAL");
  return real != nullptr && real[0] == '1';
}

template <typename Fn>
Fn Next(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {

int fsync(int fd) {
  Delay();
  static const auto next = Next<int (*)(int)>("fsync");
  return Real() ? next(fd) : 0;
}

int fdatasync(int fd) {
  Delay();
  static const auto next = Next<int (*)(int)>("fdatasync");
  return Real() ? next(fd) : 0;
}

int syncfs(int fd) {
  Delay();
  static const auto next = Next<int (*)(int)>("syncfs");
  return Real() ? next(fd) : 0;
}

}  // extern "C"
