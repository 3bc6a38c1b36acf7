#include "store/sqlite/write_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "base/clock.h"

namespace store {
namespace {

// The record is written at a fixed size, padded with spaces, so that a shorter
// holder line never leaves the tail of a longer one behind (no ftruncate).
constexpr size_t kRecordBytes = 256;
constexpr int kFirstBackoffMicros = 100;
constexpr int kMaxBackoffMicros = 10000;

// When this process started, in ms since the epoch, from /proc (field 22 of
// /proc/self/stat is the start in clock ticks after boot; /proc/stat's btime
// is the boot). Read at every Open, so a forked child names its own start.
// Falls back to now where /proc is not there.
int64_t ProcessStartMs() {
  long long start_ticks = -1, boot_s = -1;
  if (FILE* f = std::fopen("/proc/self/stat", "r")) {
    char buf[1024];
    size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    // The command name (field 2) may hold spaces; fields after it follow ')'.
    if (const char* p = std::strrchr(buf, ')')) {
      int field = 2;
      for (; *p != '\0' && field < 22; ++p) {
        if (*p == ' ') ++field;
      }
      if (field == 22) start_ticks = std::atoll(p);
    }
  }
  if (FILE* f = std::fopen("/proc/stat", "r")) {
    char line[256];
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      if (std::strncmp(line, "btime ", 6) == 0) boot_s = std::atoll(line + 6);
    }
    std::fclose(f);
  }
  const long hz = ::sysconf(_SC_CLK_TCK);
  if (start_ticks < 0 || boot_s < 0 || hz <= 0) return base::NowMs();
  return boot_s * 1000 + start_ticks * 1000 / hz;
}

}  // namespace

WriteLock::WriteLock(std::string path, int fd, std::string record)
    : path_(std::move(path)), fd_(fd), record_prefix_(std::move(record)) {}

Status WriteLock::Open(const std::string& path, const std::string& program,
                       std::unique_ptr<WriteLock>* out) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError("open lock file " + path + ": " + std::strerror(errno));
  std::string prefix = "pid " + std::to_string(::getpid()) + " program " + program +
                       " started_ms " + std::to_string(ProcessStartMs());
  out->reset(new WriteLock(path, fd, std::move(prefix)));
  return Status::Ok();
}

WriteLock::~WriteLock() {
  if (held_) Release();
  ::close(fd_);
}

Status WriteLock::Acquire(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int backoff_us = kFirstBackoffMicros;
  for (;;) {
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) break;
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      return Status::IOError("flock " + path_ + ": " + std::strerror(errno));
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return Status::Busy("write lock " + path_ + " not acquired in " +
                          std::to_string(timeout_ms) + " ms; held by " + Holder());
    }
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now).count();
    std::this_thread::sleep_for(std::chrono::microseconds(std::min<int64_t>(backoff_us, left)));
    backoff_us = std::min(backoff_us * 2, kMaxBackoffMicros);
  }
  held_ = true;
  std::string record = record_prefix_ + " locked_ms " + std::to_string(base::NowMs());
  record.resize(kRecordBytes - 1, ' ');
  record += '\n';
  // A failed write only loses the holder's name for a waiter's message; the
  // lock itself is held, so it is not an error of the transaction.
  (void)!::pwrite(fd_, record.data(), record.size(), 0);
  return Status::Ok();
}

void WriteLock::Release() {
  if (!held_) return;
  ::flock(fd_, LOCK_UN);
  held_ = false;
}

std::string WriteLock::Holder() const {
  char buf[kRecordBytes];
  ssize_t n = ::pread(fd_, buf, sizeof(buf), 0);
  if (n <= 0) return "an unknown process";
  std::string s(buf, static_cast<size_t>(n));
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s.empty() ? "an unknown process" : s;
}

}  // namespace store
