#ifndef EDGEALLOC_TESTS_SERVER_STORAGE_DOUBLE_H_
#define EDGEALLOC_TESTS_SERVER_STORAGE_DOUBLE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "store/storage.h"
#include "tests/support/forwarding_storage.h"

namespace server {
namespace fixture {

// A store::Storage around a real one, for Service(config, wrap): every call
// is the real one's, except that
//   - while Block() holds (until Unblock()), the synchronous reads the
//     routes make (GetSession, CountTenantSessions, ListSessions, ListEndedSessions,
//     GetContainer, ListContainers) wait, as on a database that stopped
//     answering; blocked() counts the reads waiting so; BlockTenant(t)
//     holds only ListSessions of tenant t, as a tenant's heavy pages would;
//   - while BlockSubmits() holds (until Unblock()), Claim, Register, Drain,
//     Undrain, Remove and PartitionOf wait before they submit or answer, as SQLite with shards does while
//     it reads the other shard files first; counted in blocked() too;
//   - after FailReads(text), those reads fail with `text` (IOError, or
//     Outcome::kError), as libpq's would with the database's host and port;
//   - writer_stats are the double's own, so that a test may set `failing`
//     (SetFailing) as a writer cut off from its database would, or the
//     clock offset the writers measured (SetClockOffset);
//   - while HoldClaimAnswers() holds (until DeliverHeldClaims()), a claim
//     is made by the real storage but its callback is kept instead of run,
//     as one lost in a wedged writer; DeliverHeldClaims() runs the kept
//     ones, late. held_claims() counts them.
class StorageDouble : public testing::ForwardingStorage {
 public:
  explicit StorageDouble(std::unique_ptr<store::Storage> real)
      : ForwardingStorage(real.get()), real_(std::move(real)) {
    for (int p = 0; p < real_->partitions(); ++p) {
      stats_.push_back(std::make_unique<store::WriterStats>());
    }
  }
  ~StorageDouble() override { Unblock(); }

  void Block() {
    std::lock_guard<std::mutex> lock(mu_);
    blocking_ = true;
  }
  void BlockTenant(std::string tenant) {
    std::lock_guard<std::mutex> lock(mu_);
    blocked_tenant_ = std::move(tenant);
  }
  void BlockSubmits() {
    std::lock_guard<std::mutex> lock(mu_);
    blocking_submits_ = true;
  }
  // Notifies under the lock: a test may unblock while another thread's
  // Service::Stop destroys the double, whose destructor then waits for this
  // lock before the condition variable goes (ThreadSanitizer saw the
  // broadcast race the destruction otherwise).
  void Unblock() {
    std::lock_guard<std::mutex> lock(mu_);
    blocking_ = false;
    blocking_submits_ = false;
    blocked_tenant_.clear();
    cv_.notify_all();
  }
  int blocked() const { return blocked_.load(); }
  void FailReads(const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_text_ = text;
  }
  void HoldClaimAnswers() {
    std::lock_guard<std::mutex> lock(mu_);
    holding_answers_ = true;
  }
  // Stops holding, and runs the callbacks held so far with their answers.
  void DeliverHeldClaims() {
    std::vector<std::pair<store::SessionCallback, store::SessionResult>> late;
    {
      std::lock_guard<std::mutex> lock(mu_);
      holding_answers_ = false;
      late.swap(held_);
    }
    for (auto& [done, result] : late) done(std::move(result));
  }
  int held_claims() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(held_.size());
  }
  void SetFailing(int partition, bool failing) {
    stats_[static_cast<size_t>(partition)]->failing.store(failing ? 1 : 0);
  }
  // Every writer measured the database's clock `offset_ms` off this node's.
  void SetClockOffset(int64_t offset_ms) {
    for (auto& stats : stats_) {
      stats->clock_offset_ms.store(offset_ms);
      stats->clock_offset_known.store(1);
    }
  }

  // ---- store::Storage ----
  void Claim(store::ClaimRequest req, store::SessionCallback done) override {
    WaitSubmit();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (holding_answers_) {
        // Runs on the writer thread; the double outlives the writers.
        done = [this, done = std::move(done)](store::SessionResult r) mutable {
          std::lock_guard<std::mutex> held(mu_);
          held_.emplace_back(std::move(done), std::move(r));
        };
      }
    }
    real_->Claim(std::move(req), std::move(done));
  }
  store::SessionResult GetSession(const store::Caller& caller,
                                  std::string_view session_id) override {
    if (std::string e = Wait(); !e.empty()) return {store::Outcome::kError, {}, e, {}};
    return real_->GetSession(caller, session_id);
  }
  store::Status CountTenantSessions(const std::string& tenant, int64_t* sessions) override {
    if (std::string e = Wait(); !e.empty()) return store::Status::IOError(e);
    return real_->CountTenantSessions(tenant, sessions);
  }
  store::Status ListSessions(const store::SessionFilter& filter, const std::string& after,
                             int limit, std::vector<store::Session>* page,
                             std::string* next_after) override {
    if (std::string e = Wait(filter.tenant); !e.empty()) return store::Status::IOError(e);
    return real_->ListSessions(filter, after, limit, page, next_after);
  }
  store::Status ListEndedSessions(const store::SessionFilter& filter, const std::string& after,
                                  int limit, std::vector<store::EndedSession>* page,
                                  std::string* next_after) override {
    if (std::string e = Wait(); !e.empty()) return store::Status::IOError(e);
    return real_->ListEndedSessions(filter, after, limit, page, next_after);
  }
  void Register(std::vector<store::ContainerSpec> specs, store::ContainerCallback done) override {
    WaitSubmit();
    real_->Register(std::move(specs), std::move(done));
  }
  store::ContainerResult GetContainer(std::string_view id) override {
    if (std::string e = Wait(); !e.empty()) return {store::Outcome::kError, {}, 0, e};
    return real_->GetContainer(id);
  }
  store::Status ListContainers(const store::ContainerFilter& filter, const std::string& after,
                               int limit, std::vector<store::ContainerInfo>* page,
                               std::string* next_after) override {
    if (std::string e = Wait(); !e.empty()) return store::Status::IOError(e);
    return real_->ListContainers(filter, after, limit, page, next_after);
  }
  void Drain(std::string id, store::ContainerCallback done) override {
    WaitSubmit();
    real_->Drain(std::move(id), std::move(done));
  }
  void Undrain(std::string id, store::ContainerCallback done) override {
    WaitSubmit();
    real_->Undrain(std::move(id), std::move(done));
  }
  void Remove(std::string id, store::ContainerCallback done) override {
    WaitSubmit();
    real_->Remove(std::move(id), std::move(done));
  }
  store::Status PartitionOf(const std::string& container_id, int* partition) override {
    WaitSubmit();
    return real_->PartitionOf(container_id, partition);
  }
  const store::WriterStats& writer_stats(int partition) const override {
    return *stats_[static_cast<size_t>(partition)];
  }

 private:
  // Waits while blocked (all reads, or those of `tenant`); then the text
  // reads are to fail with ("": none).
  std::string Wait(const std::string& tenant = "") {
    std::unique_lock<std::mutex> lock(mu_);
    auto held = [this, &tenant] {
      return blocking_ || (!tenant.empty() && tenant == blocked_tenant_);
    };
    if (held()) {
      ++blocked_;
      cv_.wait(lock, [&held] { return !held(); });
      --blocked_;
    }
    return fail_text_;
  }
  void WaitSubmit() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!blocking_submits_) return;
    ++blocked_;
    cv_.wait(lock, [this] { return !blocking_submits_; });
    --blocked_;
  }

  std::unique_ptr<store::Storage> real_;  // owned; ForwardingStorage's too
  std::vector<std::unique_ptr<store::WriterStats>> stats_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool blocking_ = false;
  bool blocking_submits_ = false;
  std::string blocked_tenant_;  // empty: none
  bool holding_answers_ = false;
  std::vector<std::pair<store::SessionCallback, store::SessionResult>> held_;
  std::string fail_text_;
  std::atomic<int> blocked_{0};
};

}  // namespace fixture
}  // namespace server

#endif  // EDGEALLOC_TESTS_SERVER_STORAGE_DOUBLE_H_
