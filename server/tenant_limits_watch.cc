#include "server/tenant_limits_watch.h"

#include <chrono>
#include <condition_variable>
#include <iterator>
#include <mutex>
#include <utility>

#include "base/clock.h"

namespace server {
namespace {

std::string Bound(int64_t own, int64_t fallback) {
  const int64_t v = own != store::TenantLimits::kUnset ? own : fallback;
  return v == store::kUnlimited ? "unlimited" : std::to_string(v);
}

}  // namespace

std::string TenantLimitsText(const store::TenantLimits& limits, int64_t default_max_sessions) {
  return "max_sessions=" + Bound(limits.max_sessions, default_max_sessions);
}

std::vector<TenantLimitsMismatch> FindTenantLimitsMismatches(
    const std::vector<store::TenantLimitsDigest>& fleet) {
  // node -> tenant -> text, "" the node's defaults.
  std::map<std::string, std::map<std::string, std::string>> by_node;
  std::set<std::string> named;
  for (const store::TenantLimitsDigest& d : fleet) {
    by_node[d.node_id][d.tenant] = d.digest;
    if (!d.tenant.empty()) named.insert(d.tenant);
  }
  std::vector<TenantLimitsMismatch> out;
  for (const std::string& tenant : named) {
    TenantLimitsMismatch m{tenant, {}};
    std::set<std::string> texts;
    for (const auto& [node, tenants] : by_node) {
      auto own = tenants.find(tenant);
      if (own == tenants.end()) own = tenants.find("");
      if (own == tenants.end()) continue;  // published nothing of it
      m.digest_by_node[node] = own->second;
      texts.insert(own->second);
    }
    if (texts.size() > 1) out.push_back(std::move(m));
  }
  return out;
}

void TenantLimitsWatch::Start() {
  if (options_.period_ms <= 0 || options_.node_id.empty() || thread_.joinable()) return;
  thread_ = std::jthread([this](std::stop_token stop) {
    std::mutex mu;  // serves the wait alone, which a stop request ends at once
    std::condition_variable_any cv;
    for (;;) {
      (void)Check(base::NowMs());  // a failure is retried next period
      std::unique_lock lock(mu);
      cv.wait_for(lock, stop, std::chrono::milliseconds(options_.period_ms), [] { return false; });
      if (stop.stop_requested()) return;
    }
  });
}

void TenantLimitsWatch::Stop() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

void TenantLimitsWatch::SetMine(std::vector<store::TenantLimitsDigest> mine) {
  base::MutexLock lock(&mu_);
  mine_ = std::move(mine);
}

store::Status TenantLimitsWatch::Check(int64_t now_ms) {
  std::vector<store::TenantLimitsDigest> mine;
  {
    base::MutexLock lock(&mu_);
    mine = mine_;
  }
  std::vector<store::TenantLimitsDigest> fleet;
  RETURN_IF_ERROR(storage_->PublishTenantLimits(options_.node_id, mine, options_.window_ms, &fleet));
  const std::vector<TenantLimitsMismatch> found = FindTenantLimitsMismatches(fleet);
  std::set<std::string> mismatched;
  for (const TenantLimitsMismatch& m : found) {
    mismatched.insert(m.tenant);
    auto& last = warned_ms_[m.tenant];
    if (!options_.warn || (last != 0 && now_ms - last < options_.warn_every_ms)) continue;
    last = now_ms;
    std::string nodes;
    for (const auto& [node, text] : m.digest_by_node) {
      nodes += (nodes.empty() ? "" : "; ") + node + ": " + text;
    }
    options_.warn("tenant " + m.tenant + " has different limits on different nodes (" + nodes +
                  "): its quota is not shared as one; give it the same line in every node's "
                  "keys file");
  }
  // A tenant that agrees again may be warned of at once if it parts again.
  for (auto it = warned_ms_.begin(); it != warned_ms_.end();) {
    it = mismatched.count(it->first) ? std::next(it) : warned_ms_.erase(it);
  }
  base::MutexLock lock(&mu_);
  mismatched_ = std::move(mismatched);
  return store::Status::Ok();
}

bool TenantLimitsWatch::Mismatched(const std::string& tenant) const {
  base::MutexLock lock(&mu_);
  return mismatched_.count(tenant) > 0;
}

}  // namespace server
