#include "allocator/allocator.h"

#include <utility>

namespace allocator {

Allocator::Allocator(store::Storage* storage, AllocatorOptions options)
    : storage_(storage), options_(options) {}

Allocator::~Allocator() { Stop(); }

void Allocator::Start() {
  reaper_.Start();
  backups_.Start();
  fleet_claims_.Start();
  waiting_room_.Start();
}

void Allocator::Stop() {
  reaper_.Stop();
  backups_.Stop();
  fleet_claims_.Stop();
  waiting_room_.Stop();
}

void Allocator::EndWaits() { waiting_room_.EndWaits(); }

int64_t Allocator::WaitingOf(const std::string& tenant) const {
  return waiting_room_.WaitingOf(tenant);
}

int64_t Allocator::ReapExpiredLeases() { return reaper_.ReapExpiredLeases(); }

std::map<PoolKey, PoolClaimCounts> Allocator::PoolClaims() const { return claims_.PoolClaims(); }

store::SessionResult Allocator::GetSession(const store::Caller& caller,
                                           std::string_view session_id) {
  return storage_->GetSession(caller, session_id);
}

store::Status Allocator::Limits(const std::string& tenant, TenantLimits* out) {
  out->max_sessions = storage_->policy().max_sessions_per_tenant;
  return storage_->CountTenantSessions(tenant, &out->sessions);
}

store::Status Allocator::ListSessions(const store::SessionFilter& filter,
                                     const std::string& after, int limit,
                                     std::vector<store::Session>* page,
                                     std::string* next_after) {
  return storage_->ListSessions(filter, after, limit, page, next_after);
}

store::Status Allocator::ListEndedSessions(const store::SessionFilter& filter,
                                          const std::string& after, int limit,
                                          std::vector<store::EndedSession>* page,
                                          std::string* next_after) {
  return storage_->ListEndedSessions(filter, after, limit, page, next_after);
}

}  // namespace allocator
