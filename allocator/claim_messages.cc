#include "allocator/claim_messages.h"

namespace allocator {

std::string QuotaExceededMessage(const std::string& tenant, int64_t max_sessions) {
  return "tenant " + tenant + " holds its maximum of " + std::to_string(max_sessions) +
         " sessions";
}

std::string NoCapacityMessage(const std::string& region, const std::string& pool,
                              bool has_fallbacks) {
  return "no healthy available container in pool " + pool + " of region " + region +
         (has_fallbacks ? " or its fallback regions" : "");
}

std::string NoMatchMessage(const std::string& selector, const std::string& region,
                           const std::string& pool, bool has_fallbacks) {
  return "no container registered in pool " + pool + " of region " + region +
         (has_fallbacks ? " or its fallback regions" : "") + " matches the selector " + selector +
         ": the claim does not wait";
}

std::string WaitedSuffix(int64_t waited_ms) {
  return " after waiting " + std::to_string(waited_ms) + " ms";
}

std::string InFlightClaimMessage(bool stopping, int64_t waited_ms, bool keyed) {
  return std::string(stopping ? "the server is stopping" : "the database had not answered") +
         " this waiting claim's claim" + WaitedSuffix(waited_ms) +
         ": its outcome is unknown; " +
         (keyed ? "a retry with the same idempotency key gets the session it makes, if any"
                : "a session it makes is released");
}

std::string UnknownPoolMessage(const std::string& region, const std::string& pool,
                               bool has_fallbacks, const std::vector<std::string>& region_pools) {
  constexpr size_t kNamed = 20;  // a region may have many pools: the first few
  std::string known;
  for (size_t i = 0; i < region_pools.size() && i < kNamed; ++i) {
    known += (i > 0 ? ", " : "") + region_pools[i];
  }
  if (region_pools.size() > kNamed) known += ", ...";
  return "no container of pool " + pool + " is registered in region " + region +
         (has_fallbacks ? " or its fallback regions" : "") + " (a pool is known once a " +
         "container of it registered, until all are deleted); region " + region +
         (region_pools.empty() ? " has no pools" : " has pools " + known);
}

std::string ClientGoneMessage() { return "the client went away while its claim waited"; }

std::string PoolWaitersFullMessage(int max_waiters_per_pool, const std::string& region,
                                   const std::string& pool) {
  return std::to_string(max_waiters_per_pool) + " claims already wait for pool " + pool +
         " of region " + region + " (--max-claim-waiters)";
}

std::string TenantWaitersFullMessage(const std::string& tenant, int64_t waiting, int64_t bound,
                                     bool own) {
  return "tenant " + tenant + " already has " + std::to_string(waiting) + " of its " +
         std::to_string(bound) + " waiting claims (a claim counts once per region it names; " +
         (own ? "its max_waiters in the keys file)" : "--max-claim-waiters-per-tenant)");
}

std::string TotalWaitersFullMessage(int64_t bound) {
  // Not how many wait: that is other tenants' business.
  return "this node's " + std::to_string(bound) +
         " waiting claims, every tenant's together, are taken (--max-claim-waiters-total)";
}

}  // namespace allocator
