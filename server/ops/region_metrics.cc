#include "server/ops/region_metrics.h"

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace server {
namespace {

// Every region worth a lag series: the mirror's (registered containers) and
// the backups' (perhaps empty yet). Never a name a client sent.
std::set<std::string> KnownRegions(const MetricsSources& src) {
  std::set<std::string> regions;
  if (src.mirror != nullptr) {
    // Held by name: a range-for over Current()->regions() drops the snapshot
    // before the loop runs (the temporary dies), and a refresh frees it.
    const std::shared_ptr<const kvmirror::Snapshot> snapshot = src.mirror->Current();
    for (const auto& [region, pools] : snapshot->regions()) regions.insert(region);
  }
  if (src.pool_claims != nullptr) {
    for (const auto& s : src.pool_claims->backups().States()) {
      regions.insert(s.region);
      regions.insert(s.backup);
    }
  }
  return regions;
}

}  // namespace

void RegionFamilies(const MetricsSources& src, Exposition* out) {
  if (src.batcher != nullptr) {
    out->Family("edgealloc_heartbeat_lag_seconds", "gauge",
                "How long the oldest heartbeat of the region accepted (202) and not yet written "
                "has waited, among the queues that carry its heartbeats (0: none); past "
                "--max-heartbeat-lag-ms a region with a backup has its claims go there.");
    for (const std::string& region : KnownRegions(src)) {
      out->Sample("edgealloc_heartbeat_lag_seconds", {{"region", region}},
                  static_cast<double>(src.batcher->RegionLagMs(region)) / 1e3);
    }
  }
  if (src.allocator != nullptr) {
    const allocator::AllocatorStats& a = *src.allocator;
    out->Family("edgealloc_claims_served_total", "counter",
                "Claims that made or replayed a session, by the region that served them: "
                "home (their own), fallback (one of their fallback_regions) or backup (their "
                "region's designated backup).");
    const std::pair<const char*, const std::atomic<uint64_t>*> by[] = {
        {"home", &a.served_home}, {"fallback", &a.served_fallback}, {"backup", &a.served_backup}};
    for (const auto& [name, n] : by) {
      out->Sample("edgealloc_claims_served_total", {{"served_by", name}},
                  n->load(std::memory_order_relaxed));
    }
  }
  if (src.pool_claims == nullptr) return;
  const std::vector<allocator::BackupState> states = src.pool_claims->backups().States();
  out->Family("edgealloc_region_on_backup", "gauge",
              "1 while the region's claims go to its designated backup (its heartbeat lag went "
              "past --max-heartbeat-lag-ms and has not stayed at most half of it for as long), "
              "else 0; one series a region with a backup.");
  for (const auto& s : states) {
    out->Sample("edgealloc_region_on_backup", {{"region", s.region}, {"backup", s.backup}},
                s.on_backup ? 1.0 : 0.0);
  }
  out->Family("edgealloc_region_backup_switches_total", "counter",
              "Times the region's claims went to its designated backup.");
  for (const auto& s : states) {
    out->Sample("edgealloc_region_backup_switches_total", {{"region", s.region}}, s.switches);
  }
}

std::string RegionsJson(const MetricsSources& src) {
  std::map<std::string, allocator::BackupState> backups;
  int64_t bound = allocator::kDefaultMaxHeartbeatLagMs;
  if (src.pool_claims != nullptr) {
    bound = src.pool_claims->backups().max_lag_ms();
    for (auto& s : src.pool_claims->backups().States()) backups.emplace(s.region, s);
  }
  nlohmann::json regions = nlohmann::json::array();
  for (const std::string& region : KnownRegions(src)) {
    nlohmann::json r = {{"region", region},
                        {"lag_ms", src.batcher ? src.batcher->RegionLagMs(region) : 0},
                        {"backup", nullptr}, {"on_backup", false}, {"on_backup_ms", 0}};
    if (auto it = backups.find(region); it != backups.end()) {
      r["backup"] = it->second.backup;
      r["on_backup"] = it->second.on_backup;
      r["on_backup_ms"] = it->second.on_backup_ms;
      r["switches"] = it->second.switches;
    }
    regions.push_back(std::move(r));
  }
  return nlohmann::json{{"max_heartbeat_lag_ms", bound}, {"regions", std::move(regions)}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace server
