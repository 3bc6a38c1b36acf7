#ifndef EDGEALLOC_ALLOCATOR_CLAIM_MESSAGES_H_
#define EDGEALLOC_ALLOCATOR_CLAIM_MESSAGES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace allocator {

// The words for people of every claim the Allocator refuses, in one place:
// a route sends them as the error's message (server/api/errors.h gives the
// status and code). Pure functions.

// kQuotaExceeded: the tenant holds the most sessions it may.
std::string QuotaExceededMessage(const std::string& tenant, int64_t max_sessions);
// kNoCapacity: nothing free in the pool (or in any fallback region's).
std::string NoCapacityMessage(const std::string& region, const std::string& pool,
                              bool has_fallbacks);
// kNoMatch: the selector (its JSON) matches no container registered in the
// pool of the region or its fallback regions; the claim does not wait.
std::string NoMatchMessage(const std::string& selector, const std::string& region,
                           const std::string& pool, bool has_fallbacks);
// What a waiting claim answered kNoCapacity adds: how long it waited.
std::string WaitedSuffix(int64_t waited_ms);
// The answer (503 unavailable) to a waiting claim whose claim is still
// with the database past its time and a second, or when the server stops:
// the outcome is unknown, and what that claim makes is released, or kept
// for a retry with its idempotency key.
std::string InFlightClaimMessage(bool stopping, int64_t waited_ms, bool keyed);
// kUnknownPool: no container of its pool is registered in its region (nor
// its fallback regions), so it does not wait; `region_pools` are the pools
// its region has (the mirror's view), named for a mistyped one.
std::string UnknownPoolMessage(const std::string& region, const std::string& pool,
                               bool has_fallbacks, const std::vector<std::string>& region_pools);
// kNoCapacity for a waiting claim whose client went away.
std::string ClientGoneMessage();

// kOverloaded: a waiting claim past a bound, per pool, per tenant (`own`:
// the tenant's max_waiters from the keys file) or in all. Each names the
// bound, and only the caller's own tenant and pool.
std::string PoolWaitersFullMessage(int max_waiters_per_pool, const std::string& region,
                                   const std::string& pool);
std::string TenantWaitersFullMessage(const std::string& tenant, int64_t waiting, int64_t bound,
                                     bool own);
std::string TotalWaitersFullMessage(int64_t bound);

}  // namespace allocator

#endif  // EDGEALLOC_ALLOCATOR_CLAIM_MESSAGES_H_
