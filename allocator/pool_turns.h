#ifndef EDGEALLOC_ALLOCATOR_POOL_TURNS_H_
#define EDGEALLOC_ALLOCATOR_POOL_TURNS_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>

#include "allocator/allocator_types.h"

namespace allocator {

// Whose turn it is in a waiting pool, and how fast a pool's waiters are
// served, for the WaitingRoom (which holds it under its mutex; not
// thread-safe itself).
//
// Turns: tenants take turns in each pool. The next to claim is the waiting
// tenant whose last turn in that pool is the oldest (a tenant never served
// there first, the earliest arrival breaking ties), so one tenant's hundreds
// of waiters make another tenant's single waiter wait for one turn, not for
// all of them; within a tenant, first come first served. A pool's turns are
// forgotten when its queue empties: fairness is among those waiting.
//
// Pace: the times of a pool's last kPaceSamples serves within kPaceWindowMs.
// While a pool has waiters every container it frees goes to one of them, so
// that pace is its recent release rate, the base of the Retry-After a waiter
// that gives up is told (RetryAfterS).
class PoolTurns {
 public:
  static constexpr int kPaceSamples = 16;
  static constexpr int64_t kPaceWindowMs = 60'000;
  static constexpr int64_t kMaxRetryAfterS = 60;

  // The turn of `tenant` in `pool` (a claim goes out for it now).
  void Take(const PoolKey& pool, const std::string& tenant);
  // 0 if `tenant` had no turn in `pool` since its queue last emptied; else
  // larger for a later turn.
  uint64_t LastTurn(const PoolKey& pool, const std::string& tenant) const;
  // The pool's queue emptied.
  void Forget(const PoolKey& pool);

  // A waiter of `pool` got a session at `now_ms`.
  void Served(const PoolKey& pool, int64_t now_ms);
  // Serves a second in `pool` over its recent samples; 0 if fewer than two
  // within the window.
  double ServesPerSecond(const PoolKey& pool, int64_t now_ms) const;
  // Drops the samples older than the window (and pools left with none).
  void PruneBefore(int64_t now_ms);

  // Whole seconds, 1 to kMaxRetryAfterS, until a waiter with `ahead`
  // waiters before it would be served at `per_s` serves a second; with no
  // pace known, as long again as it waited (nothing freed meanwhile).
  static int64_t RetryAfterS(int64_t ahead, double per_s, int64_t waited_ms);

 private:
  uint64_t next_turn_ = 1;
  std::map<PoolKey, std::map<std::string, uint64_t>> turns_;
  std::map<PoolKey, std::deque<int64_t>> served_ms_;
};

}  // namespace allocator

#endif  // EDGEALLOC_ALLOCATOR_POOL_TURNS_H_
