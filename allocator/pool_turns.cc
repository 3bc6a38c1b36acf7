#include "allocator/pool_turns.h"

#include <algorithm>
#include <cmath>

namespace allocator {

void PoolTurns::Take(const PoolKey& pool, const std::string& tenant) {
  turns_[pool][tenant] = next_turn_++;
}

uint64_t PoolTurns::LastTurn(const PoolKey& pool, const std::string& tenant) const {
  auto p = turns_.find(pool);
  if (p == turns_.end()) return 0;
  auto t = p->second.find(tenant);
  return t == p->second.end() ? 0 : t->second;
}

void PoolTurns::Forget(const PoolKey& pool) { turns_.erase(pool); }

void PoolTurns::Served(const PoolKey& pool, int64_t now_ms) {
  auto& times = served_ms_[pool];
  times.push_back(now_ms);
  while (times.size() > kPaceSamples) times.pop_front();
}

double PoolTurns::ServesPerSecond(const PoolKey& pool, int64_t now_ms) const {
  auto it = served_ms_.find(pool);
  if (it == served_ms_.end()) return 0;
  const std::deque<int64_t>& times = it->second;
  auto first = std::lower_bound(times.begin(), times.end(), now_ms - kPaceWindowMs);
  const auto n = std::distance(first, times.end());
  // From the oldest sample to now: a pool that stopped freeing slows down.
  const int64_t span_ms = now_ms - (n > 0 ? *first : now_ms);
  if (n < 2 || span_ms <= 0) return 0;
  return static_cast<double>(n - 1) * 1000.0 / static_cast<double>(span_ms);
}

void PoolTurns::PruneBefore(int64_t now_ms) {
  for (auto it = served_ms_.begin(); it != served_ms_.end();) {
    auto& times = it->second;
    while (!times.empty() && times.front() < now_ms - kPaceWindowMs) times.pop_front();
    it = times.empty() ? served_ms_.erase(it) : std::next(it);
  }
}

int64_t PoolTurns::RetryAfterS(int64_t ahead, double per_s, int64_t waited_ms) {
  // With no pace, the wait rounded (a claim that waited 2 s is told 2, not
  // 3 for the few ms past its wait_ms it took to be answered).
  const int64_t seconds =
      per_s > 0 ? static_cast<int64_t>(
                      std::ceil(static_cast<double>(std::max<int64_t>(0, ahead) + 1) / per_s))
                : (waited_ms + 500) / 1000;
  return std::clamp<int64_t>(seconds, 1, kMaxRetryAfterS);
}

}  // namespace allocator
