#include "allocator/region_backups.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"

namespace allocator {

std::string AddBackupRegion(std::string_view text, BackupMap* map) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) return "'" + std::string(text) + "' is not REGION=BACKUP";
  const std::string region(text.substr(0, eq)), backup(text.substr(eq + 1));
  if (region.empty() || backup.empty() || backup.find('=') != std::string::npos) {
    return "'" + std::string(text) + "' is not REGION=BACKUP (two region names)";
  }
  if (region == backup) return "region " + region + " cannot be its own backup";
  auto [it, added] = map->emplace(region, backup);
  if (!added && it->second != backup) {
    return "region " + region + " is given two backups, " + it->second + " and " + backup;
  }
  return "";
}

std::string BackupCycle(const BackupMap& map) {
  for (const auto& entry : map) {
    const std::string& start = entry.first;
    // Each region has one backup: the walk from `start` ends, comes back to
    // it (a cycle through it), or goes round another cycle (found from one
    // of that cycle's own regions), which takes more steps than regions.
    std::vector<std::string> path{start};
    for (auto it = map.find(start); it != map.end() && path.size() <= map.size();
         it = map.find(it->second)) {
      path.push_back(it->second);
      if (it->second != start) continue;
      std::string text;
      for (const auto& region : path) text += (text.empty() ? "" : " -> ") + region;
      return text;
    }
  }
  return "";
}

const char* ServedByName(ServedBy served_by) {
  switch (served_by) {
    case ServedBy::kHome: return "home";
    case ServedBy::kFallback: return "fallback";
    case ServedBy::kBackup: return "backup";
  }
  return "home";
}

bool LagHysteresis::Update(int64_t lag_ms, int64_t now_ms) {
  if (lag_ms > max_lag_ms_) {
    if (!on_backup_) since_ms_ = now_ms;
    on_backup_ = true;
    calm_since_ms_ = -1;
    return true;
  }
  if (!on_backup_) return false;
  if (lag_ms * 2 > max_lag_ms_) {
    calm_since_ms_ = -1;  // between half and the bound: not calm yet
  } else if (calm_since_ms_ < 0) {
    calm_since_ms_ = now_ms;
  } else if (now_ms - calm_since_ms_ >= max_lag_ms_) {
    on_backup_ = false;
    calm_since_ms_ = -1;
  }
  return on_backup_;
}

RegionBackups::RegionBackups(BackupMap backups, int64_t max_lag_ms)
    : backups_(std::move(backups)), max_lag_ms_(std::max<int64_t>(1, max_lag_ms)) {
  base::MutexLock lock(&mu_);
  for (const auto& [region, backup] : backups_) regions_.emplace(region, Region(max_lag_ms_));
}

int64_t RegionBackups::refresh_ms() const { return std::clamp<int64_t>(max_lag_ms_ / 4, 10, 250); }

void RegionBackups::Start() {
  if (backups_.empty() || !lag_ms_ || thread_.joinable()) return;
  thread_ = std::jthread([this](std::stop_token stop) { Loop(std::move(stop)); });
}

void RegionBackups::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

void RegionBackups::Loop(std::stop_token stop) {
  // The mutex only serves the wait, which a stop request ends at once.
  std::mutex wait_mu;
  std::condition_variable_any cv;
  while (!stop.stop_requested()) {
    RefreshAll();
    std::unique_lock<std::mutex> lock(wait_mu);
    cv.wait_for(lock, stop, std::chrono::milliseconds(refresh_ms()), [] { return false; });
  }
}

void RegionBackups::RefreshAll() {
  for (const auto& [region, backup] : backups_) OnBackup(region);
}

bool RegionBackups::OnBackup(const std::string& region) {
  if (!lag_ms_ || !backups_.contains(region)) return false;
  // Sampled outside the lock: the lag reads the batcher's lanes.
  const int64_t lag = lag_ms_(region);
  base::MutexLock lock(&mu_);
  Region& r = regions_.at(region);
  const bool was = r.hysteresis.on_backup();
  r.lag_ms = lag;
  const bool now = r.hysteresis.Update(lag, base::SteadyNowMs());
  if (now && !was) ++r.switches;
  return now;
}

std::string RegionBackups::Resolve(const std::string& region) {
  // Ends: BackupCycle refused cycles before the server started.
  std::string at = region;
  while (OnBackup(at)) at = backups_.at(at);
  return at;
}

void RegionBackups::AddBackup(store::ClaimRequest* req) const {
  auto it = backups_.find(req->region);
  if (it == backups_.end()) return;
  const auto& named = req->fallback_regions;
  if (std::find(named.begin(), named.end(), it->second) != named.end()) return;
  req->fallback_regions.push_back(it->second);
}

store::ClaimRequest RegionBackups::Routed(const store::ClaimRequest& req) {
  if (backups_.empty()) return req;
  std::vector<std::string> order;
  auto add = [&order](std::string region) {
    if (std::find(order.begin(), order.end(), region) == order.end()) {
      order.push_back(std::move(region));
    }
  };
  add(Resolve(req.region));
  for (const auto& region : req.fallback_regions) add(Resolve(region));
  store::ClaimRequest routed = req;
  routed.region = order.front();
  routed.fallback_regions.assign(order.begin() + 1, order.end());
  return routed;
}

ServedBy RegionBackups::ServedByOf(const std::string& home, const std::string& served) const {
  if (served == home) return ServedBy::kHome;
  std::string at = home;
  for (size_t hops = 0; hops < backups_.size(); ++hops) {
    auto it = backups_.find(at);
    if (it == backups_.end()) break;
    if (it->second == served) return ServedBy::kBackup;
    at = it->second;
  }
  return ServedBy::kFallback;
}

std::vector<BackupState> RegionBackups::States() const {
  const int64_t now = base::SteadyNowMs();
  std::vector<BackupState> states;
  base::MutexLock lock(&mu_);
  for (const auto& [region, r] : regions_) {
    BackupState s;
    s.region = region;
    s.backup = backups_.at(region);
    s.lag_ms = r.lag_ms;
    s.on_backup = r.hysteresis.on_backup();
    s.on_backup_ms = s.on_backup ? now - r.hysteresis.since_ms() : 0;
    s.switches = r.switches;
    states.push_back(std::move(s));
  }
  return states;
}

}  // namespace allocator
