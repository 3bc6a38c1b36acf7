#ifndef EDGEALLOC_SERVER_TENANT_LIMITS_WATCH_H_
#define EDGEALLOC_SERVER_TENANT_LIMITS_WATCH_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "store/storage.h"

namespace server {

// The canonical text of the limits of a tenant that the nodes on one
// database share: its quota, max_sessions, counted by the store across every
// node under the tenant's lock (its keys line's, else
// `--max-sessions-per-tenant`). claims_per_s and max_waiters are each
// node's own, and may differ. Two nodes enforce one quota exactly when
// their texts are equal.
std::string TenantLimitsText(const store::TenantLimits& limits, int64_t default_max_sessions);

// A tenant whose nodes disagree on its limits: each node's text.
struct TenantLimitsMismatch {
  std::string tenant;
  std::map<std::string, std::string> digest_by_node;
};

// The tenants (named by some node; "" rows are each node's defaults for the
// tenants its file does not name) on which the nodes of `fleet` apply
// different limits, by tenant name.
std::vector<TenantLimitsMismatch> FindTenantLimitsMismatches(
    const std::vector<store::TenantLimitsDigest>& fleet);

// Nodes share a tenant's quota on PostgreSQL by counting its sessions under
// the tenant's advisory lock, which a node takes only when the tenant has a
// quota there: two nodes whose keys files give a tenant different limits
// enforce different quotas, or one enforces none. Every period this thread
// publishes this node's tenants' limits (Storage::PublishTenantLimits),
// reads the other live nodes', and says so of each tenant they disagree on:
// a warning at most once a warn period a tenant, naming the tenant (never a
// key) and the nodes, and Mismatched() for /metrics. Nodes that stop
// publishing leave the comparison after the window.
class TenantLimitsWatch {
 public:
  struct Options {
    std::string node_id;
    std::vector<store::TenantLimitsDigest> mine;  // tenants named, and "" for the rest
    int64_t period_ms = 3000;
    int64_t window_ms = 15000;
    int64_t warn_every_ms = 60000;
    std::function<void(const std::string&)> warn;
  };
  TenantLimitsWatch(store::Storage* storage, Options options)
      : storage_(storage), options_(std::move(options)), mine_(options_.mine) {}
  TenantLimitsWatch(const TenantLimitsWatch&) = delete;
  TenantLimitsWatch& operator=(const TenantLimitsWatch&) = delete;
  ~TenantLimitsWatch() { Stop(); }

  void Start();  // no thread when period_ms <= 0 or node_id is empty
  void Stop();
  // One publish, read and comparison, now (the thread's; tests call it too).
  store::Status Check(int64_t now_ms);
  // Whether the live nodes disagree on `tenant`'s limits, as last checked.
  bool Mismatched(const std::string& tenant) const;
  // The keys file was reloaded: publish these limits from the next check on.
  void SetMine(std::vector<store::TenantLimitsDigest> mine);

 private:
  store::Storage* const storage_;
  const Options options_;  // its `mine` as at start: mine_ holds the current
  std::jthread thread_;
  mutable base::Mutex mu_;
  std::vector<store::TenantLimitsDigest> mine_ GUARDED_BY(mu_);
  std::set<std::string> mismatched_ GUARDED_BY(mu_);
  std::map<std::string, int64_t> warned_ms_;  // the thread's: tenant -> last warning
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_TENANT_LIMITS_WATCH_H_
