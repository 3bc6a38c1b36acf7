#ifndef EDGEALLOC_TESTS_SUPPORT_FORWARDING_STORAGE_H_
#define EDGEALLOC_TESTS_SUPPORT_FORWARDING_STORAGE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/storage.h"

namespace testing {

// A store::Storage that hands every call to another one, unchanged: the
// base of the tests' doubles (tests/server/storage_double.h, the
// allocator's Probe), each of which overrides only the calls it changes.
class ForwardingStorage : public store::Storage {
 public:
  explicit ForwardingStorage(store::Storage* real) : real_(real) {}

  void Claim(store::ClaimRequest req, store::SessionCallback done) override {
    real_->Claim(std::move(req), std::move(done));
  }
  void Release(const store::Caller& caller, std::string session_id, int64_t token,
               store::SessionCallback done) override {
    real_->Release(caller, std::move(session_id), token, std::move(done));
  }
  using store::Storage::Renew;
  void Renew(const store::Caller& caller, std::string session_id, int64_t token,
             int64_t lease_ms, bool shorten, store::SessionCallback done) override {
    real_->Renew(caller, std::move(session_id), token, lease_ms, shorten, std::move(done));
  }
  store::SessionResult GetSession(const store::Caller& caller,
                                  std::string_view session_id) override {
    return real_->GetSession(caller, session_id);
  }
  store::Status CountTenantSessions(const std::string& tenant, int64_t* sessions) override {
    return real_->CountTenantSessions(tenant, sessions);
  }
  store::Status ProbePools(std::vector<store::PoolProbe>* pools) override {
    return real_->ProbePools(pools);
  }
  store::Status ListSessions(const store::SessionFilter& filter, const std::string& after,
                             int limit, std::vector<store::Session>* page,
                             std::string* next_after) override {
    return real_->ListSessions(filter, after, limit, page, next_after);
  }
  store::Status ListEndedSessions(const store::SessionFilter& filter, const std::string& after,
                                  int limit, std::vector<store::EndedSession>* page,
                                  std::string* next_after) override {
    return real_->ListEndedSessions(filter, after, limit, page, next_after);
  }
  void Register(std::vector<store::ContainerSpec> specs, store::ContainerCallback done) override {
    real_->Register(std::move(specs), std::move(done));
  }
  store::ContainerResult GetContainer(std::string_view id) override {
    return real_->GetContainer(id);
  }
  store::Status ListContainers(const store::ContainerFilter& filter, const std::string& after,
                               int limit, std::vector<store::ContainerInfo>* page,
                               std::string* next_after) override {
    return real_->ListContainers(filter, after, limit, page, next_after);
  }
  void Drain(std::string id, store::ContainerCallback done) override {
    real_->Drain(std::move(id), std::move(done));
  }
  void Undrain(std::string id, store::ContainerCallback done) override {
    real_->Undrain(std::move(id), std::move(done));
  }
  void Remove(std::string id, store::ContainerCallback done) override {
    real_->Remove(std::move(id), std::move(done));
  }
  int partitions() const override { return real_->partitions(); }
  std::vector<int> PartitionsOfRegion(const std::string& region) const override {
    return real_->PartitionsOfRegion(region);
  }
  store::Status PartitionOf(const std::string& container_id, int* partition) override {
    return real_->PartitionOf(container_id, partition);
  }
  store::Status WriteHeartbeats(int partition, const std::vector<store::HeartbeatRow>& rows,
                                store::HeartbeatWriteResult* result) override {
    return real_->WriteHeartbeats(partition, rows, result);
  }
  store::Status SweepExpiredLeases(int partition, int max_rows, int64_t* ended) override {
    return real_->SweepExpiredLeases(partition, max_rows, ended);
  }
  store::Status PruneSessionHistory(int partition, int64_t history_ms, int64_t max_history_rows,
                                    int max_rows, int64_t* pruned) override {
    return real_->PruneSessionHistory(partition, history_ms, max_history_rows, max_rows, pruned);
  }
  int event_streams() const override { return real_->event_streams(); }
  store::Status ReadEvents(const store::EventQuery& query, const store::EventCursor& after,
                           store::EventPage* page) override {
    return real_->ReadEvents(query, after, page);
  }
  store::Status PruneEvents(int partition, int64_t retention_ms, int max_rows,
                            int64_t* pruned) override {
    return real_->PruneEvents(partition, retention_ms, max_rows, pruned);
  }
  store::CommitSignal* commit_signal() override { return real_->commit_signal(); }
  store::Status LeaseWebhook(const std::string& tenant, const std::string& owner,
                             int64_t lease_ms, bool* held, std::string* cursor) override {
    return real_->LeaseWebhook(tenant, owner, lease_ms, held, cursor);
  }
  store::Status AckWebhook(const std::string& tenant, const std::string& owner,
                           const std::string& cursor, int64_t lease_ms, bool* held) override {
    return real_->AckWebhook(tenant, owner, cursor, lease_ms, held);
  }
  store::Status CountSilent(int64_t cutoff_ms, std::vector<store::PoolSilence>* silent) override {
    return real_->CountSilent(cutoff_ms, silent);
  }
  int64_t OldestHeldBackMs(int partition) override { return real_->OldestHeldBackMs(partition); }
  store::Status PublishHeardUntil(const std::vector<int64_t>& heard_until_ms,
                                  int64_t dead_after_ms) override {
    return real_->PublishHeardUntil(heard_until_ms, dead_after_ms);
  }
  store::Status SweepSilentContainers(int partition, const std::function<int64_t()>& cutoff_ms,
                                      const store::HeldPools& held,
                                      int max_rows, store::SilenceSweep* sweep) override {
    return real_->SweepSilentContainers(partition, cutoff_ms, held, max_rows, sweep);
  }
  store::Status PublishClaimCounts(const std::string& node_id,
                                  const std::vector<store::PoolClaimTally>& counts,
                                  int64_t prune_after_ms, int max_pruned) override {
    return real_->PublishClaimCounts(node_id, counts, prune_after_ms, max_pruned);
  }
  store::Status ReadFleetClaimCounts(int64_t window_ms, store::FleetClaimCounts* fleet) override {
    return real_->ReadFleetClaimCounts(window_ms, fleet);
  }
  store::Status PublishTenantLimits(const std::string& node_id,
                                    const std::vector<store::TenantLimitsDigest>& mine,
                                    int64_t window_ms,
                                    std::vector<store::TenantLimitsDigest>* fleet) override {
    return real_->PublishTenantLimits(node_id, mine, window_ms, fleet);
  }
  std::unique_ptr<store::CapacityReader> NewCapacityReader(int partition,
                                                           int busy_timeout_ms) override {
    return real_->NewCapacityReader(partition, busy_timeout_ms);
  }
  const store::WriterStats& writer_stats(int partition) const override {
    return real_->writer_stats(partition);
  }
  FenceStats fence_stats() const override { return real_->fence_stats(); }
  const store::ClaimPolicy& policy() const override { return real_->policy(); }
  std::optional<uint64_t> clock_steps() const override { return real_->clock_steps(); }
  void StopWriters() override { real_->StopWriters(); }

 protected:
  store::Storage* real() const { return real_; }

 private:
  store::Storage* const real_;
};

}  // namespace testing

#endif  // EDGEALLOC_TESTS_SUPPORT_FORWARDING_STORAGE_H_
