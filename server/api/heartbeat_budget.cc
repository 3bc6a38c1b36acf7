#include "server/api/heartbeat_budget.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "server/api/errors.h"
#include "server/api/request_bodies.h"

namespace server {

HeartbeatKeyBudget::Bucket* HeartbeatKeyBudget::RefilledLocked(const std::string& key_id,
                                                                Clock::time_point now) {
  const double burst = std::max(1.0, rate_);
  auto [it, made] = buckets_.try_emplace(key_id, Bucket{burst, now});
  Bucket& b = it->second;
  if (!made && now > b.refilled) {
    const double seconds = std::chrono::duration<double>(now - b.refilled).count();
    b.tokens = std::min(burst, b.tokens + seconds * rate_);
    b.refilled = now;
  }
  return &b;
}

bool HeartbeatKeyBudget::Admit(const std::string& key_id, Clock::time_point now,
                               int64_t* retry_after_s) {
  if (rate_ <= 0) return true;
  double wait_s = 0;
  {
    base::MutexLock lock(&mu_);
    const Bucket* b = RefilledLocked(key_id, now);
    if (b->tokens >= 1) return true;
    wait_s = (1 - b->tokens) / rate_;
  }
  refused_budget.fetch_add(1, std::memory_order_relaxed);
  *retry_after_s = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(wait_s)));
  return false;
}

void HeartbeatKeyBudget::Charge(const std::string& key_id, size_t items, Clock::time_point now) {
  if (rate_ <= 0) return;
  base::MutexLock lock(&mu_);
  RefilledLocked(key_id, now)->tokens -= static_cast<double>(items);
}

size_t ReportsCapOf(const Principal& who) {
  const bool one_id = who.role == Role::kContainer && !who.report_ids.empty() &&
                      who.report_ids.back() != '*';
  return one_id ? 1 : kMaxHeartbeatsPerRequest;
}

Response HeartbeatBudgetResponse(double items_per_s, int64_t retry_after_s) {
  char rate_text[32];
  std::snprintf(rate_text, sizeof(rate_text), "%g", items_per_s);
  retry_after_s = std::max<int64_t>(1, retry_after_s);
  Response res = ErrorResponse(ApiError::kRateLimited,
                               std::string("this key is past its ") + rate_text +
                                   " heartbeat items a second on this node; nothing of this "
                                   "request was taken; retry after " +
                                   std::to_string(retry_after_s) + " s");
  res.set(http::field::retry_after, std::to_string(retry_after_s));
  return res;
}

}  // namespace server
