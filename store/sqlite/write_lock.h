#ifndef EDGEALLOC_STORE_SQLITE_WRITE_LOCK_H_
#define EDGEALLOC_STORE_SQLITE_WRITE_LOCK_H_

#include <memory>
#include <string>

#include "store/status.h"

namespace store {

// A WriteLock is the cross-process write lock of one database (docs/design.md rule
// 4): an exclusive flock on `<db>.lock`, held around each write transaction.
// The holder writes its pid, program, process start and acquisition time into
// the file, so a waiter that gives up can say who holds it. The kernel drops
// the lock when the holder dies, even by SIGKILL. Used by one thread at a time.
class WriteLock {
 public:
  // Opens (creating) the lock file. IOError if it cannot.
  static Status Open(const std::string& path, const std::string& program,
                     std::unique_ptr<WriteLock>* out);
  WriteLock(const WriteLock&) = delete;
  WriteLock& operator=(const WriteLock&) = delete;
  ~WriteLock();

  // Takes the lock, waiting at most `timeout_ms` with exponential backoff
  // (0.1 ms doubling to 10 ms). Ok once held; Busy naming the holder on
  // timeout; IOError if flock itself fails.
  // REQUIRES: not already held by this object.
  Status Acquire(int timeout_ms);
  // Drops the lock. The holder line is left in the file: it is only read by a
  // waiter that timed out, and by then it names the last holder.
  void Release();
  bool held() const { return held_; }

  // What the file says about its holder, e.g.
  // "pid 4242 program edgealloc serve started_ms 1790000000000 locked_ms 1790000000123".
  std::string Holder() const;
  const std::string& path() const { return path_; }

 private:
  WriteLock(std::string path, int fd, std::string record);
  std::string path_;
  int fd_;
  std::string record_prefix_;  // "pid N program P started_ms T": fixed for this process
  bool held_ = false;
};

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_WRITE_LOCK_H_
