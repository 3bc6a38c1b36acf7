#include "store/sqlite/registration_gate.h"

namespace store {

Status RegistrationGate::Enter(const std::string& program) {
  {
    base::MutexLock lock(&mu_);
    while (registering_) cv_.Wait(&mu_);
    registering_ = true;
  }
  Status s = lock_ != nullptr ? Status::Ok() : WriteLock::Open(lock_path_, program, &lock_);
  if (s.ok()) s = lock_->Acquire(lock_timeout_ms_);
  if (!s.ok()) Leave();
  return s;
}

void RegistrationGate::Leave() {
  if (lock_ != nullptr && lock_->held()) lock_->Release();
  {
    base::MutexLock lock(&mu_);
    registering_ = false;
  }
  cv_.Signal();
}

}  // namespace store
