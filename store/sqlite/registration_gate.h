#ifndef EDGEALLOC_STORE_SQLITE_REGISTRATION_GATE_H_
#define EDGEALLOC_STORE_SQLITE_REGISTRATION_GATE_H_

#include <memory>
#include <string>
#include <utility>

#include "base/mutex.h"
#include "store/sqlite/write_lock.h"
#include "store/status.h"

namespace store {

// Lets one registration of containers run at a time, in this process and
// across processes (an exclusive flock on `<db>.register.lock`), from its
// checks until its last shard's commit, so that no two registrations put one
// id into two shards (SqliteStorage::Register, several shards only).
class RegistrationGate {
 public:
  static constexpr int kLockTimeoutMs = 10000;
  explicit RegistrationGate(std::string lock_path, int lock_timeout_ms = kLockTimeoutMs)
      : lock_path_(std::move(lock_path)), lock_timeout_ms_(lock_timeout_ms) {}
  RegistrationGate(const RegistrationGate&) = delete;
  RegistrationGate& operator=(const RegistrationGate&) = delete;

  // Waits for this process's running registration, then takes the file's
  // lock (opened on first use; `program` names the holder in it): Busy after
  // lock_timeout_ms, naming the holder. Ok: the caller must Leave.
  Status Enter(const std::string& program);
  // Ends the registration; may run on another thread than Enter (a
  // writer's, after the commit).
  void Leave();

 private:
  const std::string lock_path_;
  const int lock_timeout_ms_;
  base::Mutex mu_;
  base::CondVar cv_;
  bool registering_ GUARDED_BY(mu_) = false;
  // Touched only by the registration that is running.
  std::unique_ptr<WriteLock> lock_;
};

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_REGISTRATION_GATE_H_
