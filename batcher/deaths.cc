#include "batcher/deaths.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

namespace batcher {
namespace {

std::string Seconds(int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  return buf;
}

// "weur/chrome 2, eeur/chrome 1 and 3 more pools", the largest first.
std::string PoolCounts(const std::vector<store::DeadContainer>& dead) {
  std::map<std::pair<std::string, std::string>, int64_t> by_pool;
  for (const auto& d : dead) ++by_pool[{d.region, d.pool}];
  std::vector<std::pair<int64_t, std::string>> pools;
  for (const auto& [key, n] : by_pool) pools.push_back({n, key.first + "/" + key.second});
  std::stable_sort(pools.begin(), pools.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (size_t i = 0; i < pools.size() && i < kDeathLinePools; ++i) {
    out += (i ? ", " : "") + pools[i].second + " " + std::to_string(pools[i].first);
  }
  if (pools.size() > kDeathLinePools) {
    out += " and " + std::to_string(pools.size() - kDeathLinePools) + " more pools";
  }
  return out;
}

}  // namespace

std::string DescribeDeaths(std::vector<store::DeadContainer> dead) {
  if (dead.empty()) return "";
  const auto reported = std::count_if(dead.begin(), dead.end(), [](const auto& d) { return d.reported; });
  std::string line = "reaper: " + std::to_string(dead.size()) +
                     (dead.size() == 1 ? " container" : " containers") + " dead (" +
                     std::to_string(static_cast<int64_t>(dead.size()) - reported) + " silent, " +
                     std::to_string(reported) + " reported dead): " + PoolCounts(dead);
  std::vector<int64_t> silence;
  for (const auto& d : dead) silence.push_back(d.silent_ms);
  std::sort(silence.begin(), silence.end());
  line += "; silent up to " + Seconds(silence.back()) + ", median " +
          Seconds(silence[silence.size() / 2]) + ";";
  for (size_t i = 0; i < dead.size() && i < kDeathLineIds; ++i) {
    line += (i ? ", " : " ") + dead[i].id;
  }
  if (dead.size() > kDeathLineIds) {
    line += " and " + std::to_string(dead.size() - kDeathLineIds) + " more";
  }
  return line;
}

void RecentDeaths::Prune(int64_t now_ms) {
  const int64_t oldest = (now_ms - kRecentDeathsMs) / 60000;
  for (auto it = pools_.begin(); it != pools_.end();) {
    std::erase_if(it->second, [oldest](const Minute& m) { return m.minute < oldest; });
    it = it->second.empty() ? pools_.erase(it) : std::next(it);
  }
}

void RecentDeaths::Add(int64_t now_ms, const std::vector<store::DeadContainer>& dead) {
  const int64_t minute = now_ms / 60000;
  base::MutexLock lock(&mu_);
  for (const auto& d : dead) {
    std::vector<Minute>& minutes = pools_[{d.region, d.pool}];
    if (minutes.empty() || minutes.back().minute != minute) minutes.push_back(Minute{minute});
    ++(d.reported ? minutes.back().reported : minutes.back().silent);
    minutes.back().last_ms = now_ms;
  }
  Prune(now_ms);
}

std::vector<PoolDeaths> RecentDeaths::Snapshot(int64_t now_ms) const {
  const int64_t oldest = (now_ms - kRecentDeathsMs) / 60000;
  std::vector<PoolDeaths> out;
  {
    base::MutexLock lock(&mu_);
    for (const auto& [key, minutes] : pools_) {
      PoolDeaths d{key.first, key.second};
      for (const Minute& m : minutes) {
        if (m.minute < oldest) continue;
        d.silent += m.silent;
        d.reported += m.reported;
        d.last_ms = std::max(d.last_ms, m.last_ms);
      }
      if (d.silent + d.reported > 0) out.push_back(std::move(d));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const PoolDeaths& a, const PoolDeaths& b) {
    return a.silent + a.reported > b.silent + b.reported;
  });
  return out;
}

}  // namespace batcher
