#ifndef EDGEALLOC_SERVER_API_HEARTBEAT_BUDGET_H_
#define EDGEALLOC_SERVER_API_HEARTBEAT_BUDGET_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "base/mutex.h"
#include "server/http/auth.h"
#include "server/http/message.h"

namespace server {

// Heartbeat items a key may send a second, on each node
// (--heartbeat-items-per-key-per-s).
inline constexpr double kDefaultHeartbeatItemsPerKeyPerS = 20000;

// A HeartbeatKeyBudget holds a token bucket of heartbeat items for each key
// that sends heartbeats (Principal::key_id; open mode is one key): it
// refills at `items_per_s` up to a burst of the same (at least one item).
// A request is admitted on its headers while its key's bucket holds an
// item (Admit), before its body is read; once parsed, the items it carried
// are taken (Charge), so a request larger than what is left runs the
// bucket into debt and the key's next requests wait until it is paid:
// a key's items average at most the rate, and a refused request costs
// nothing but its headers. Buckets are made as keys first send, so their
// number is bounded by the keys files' keys. Safe from any thread.
class HeartbeatKeyBudget {
 public:
  using Clock = std::chrono::steady_clock;

  // items_per_s 0: no budget (Admit always admits).
  explicit HeartbeatKeyBudget(double items_per_s) : rate_(items_per_s) {}
  HeartbeatKeyBudget(const HeartbeatKeyBudget&) = delete;
  HeartbeatKeyBudget& operator=(const HeartbeatKeyBudget&) = delete;

  // True if `key_id`'s bucket holds at least one item at `now`; else false,
  // counted (refused_budget), with *retry_after_s the whole seconds until it
  // does (at least 1).
  bool Admit(const std::string& key_id, Clock::time_point now, int64_t* retry_after_s);
  // Takes `items` from `key_id`'s bucket at `now`, into debt if it holds fewer.
  void Charge(const std::string& key_id, size_t items, Clock::time_point now);

  double rate() const { return rate_; }

  // Requests refused on their headers, the key past its budget (429).
  std::atomic<uint64_t> refused_budget{0};
  // Requests refused for carrying more reports than their key's scope
  // names containers (ReportsCapOf; 400).
  std::atomic<uint64_t> refused_items{0};
  // Items folded into a later one of the same container of the same
  // request before they were queued (batcher::CoalesceReports).
  std::atomic<uint64_t> folded{0};

 private:
  struct Bucket {
    double tokens = 0;
    Clock::time_point refilled;
  };
  // The bucket of `key_id`, refilled to `now`; a new key's is full.
  Bucket* RefilledLocked(const std::string& key_id, Clock::time_point now) REQUIRES(mu_);

  const double rate_;
  base::Mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_ GUARDED_BY(mu_);
};

// The most reports, once folded, a request of `who` may carry: a key scoped
// to one exact container id reports that container only, so one; any other
// key kMaxHeartbeatsPerRequest.
size_t ReportsCapOf(const Principal& who);

// 429 rate_limited with Retry-After: the key is past its heartbeat items a
// second; nothing of the request was taken.
Response HeartbeatBudgetResponse(double items_per_s, int64_t retry_after_s);

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_HEARTBEAT_BUDGET_H_
