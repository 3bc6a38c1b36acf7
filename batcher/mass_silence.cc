#include "batcher/mass_silence.h"

#include <algorithm>
#include <cstdio>

namespace batcher {
namespace {

std::string Percent(double fraction) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", fraction * 100);
  return buf;
}

}  // namespace

MassSilence::MassSilence(double fraction, int64_t grace_ms,
                         std::function<void(const std::string&)> log)
    : fraction_(fraction), grace_ms_(grace_ms), log_(std::move(log)) {}

std::vector<PoolKey> MassSilence::Update(const std::vector<store::PoolSilence>& silent,
                                         const LiveByPool& live) {
  std::map<PoolKey, int64_t> silent_by_pool;
  int64_t fleet_silent = 0, fleet_live = 0;
  for (const store::PoolSilence& p : silent) {
    silent_by_pool[{p.region, p.pool}] += p.silent;
    fleet_silent += p.silent;
  }
  for (const auto& [key, n] : live) fleet_live += n;
  const auto mass = [this](int64_t quiet, int64_t all) {
    return quiet >= kMassSilenceMinContainers && static_cast<double>(quiet) > fraction_ * all;
  };
  const bool fleet = mass(fleet_silent, fleet_live);
  char grace[32];
  std::snprintf(grace, sizeof grace, "%.1f s", static_cast<double>(grace_ms_) / 1e3);
  for (const auto& [key, quiet] : silent_by_pool) {
    if (held_.count(key) != 0) continue;
    const auto it = live.find(key);
    const int64_t all = it == live.end() ? quiet : std::max(it->second, quiet);
    if (!fleet && !mass(quiet, all)) continue;
    held_[key] = quiet;
    episodes_.fetch_add(1, std::memory_order_relaxed);
    if (log_) {
      log_("reaper: mass silence: " + key.first + "/" + key.second + " " +
           std::to_string(quiet) + " of " + std::to_string(all) + " containers silent" +
           (fleet ? " (the fleet: " + std::to_string(fleet_silent) + " of " +
                        std::to_string(fleet_live) + ")"
                  : "") +
           ", more than " + Percent(fraction_) +
           " at once; they are not handed out, and their sessions end only after " + grace +
           " of silence (--mass-silence-grace-ms)");
    }
  }
  for (auto it = held_.begin(); it != held_.end();) {
    if (silent_by_pool.count(it->first) != 0) {
      ++it;
      continue;
    }
    if (log_) {
      log_("reaper: mass silence over: " + it->first.first + "/" + it->first.second +
           " (none of it silent now)");
    }
    it = held_.erase(it);
  }
  held_count_.store(static_cast<int64_t>(held_.size()), std::memory_order_relaxed);
  std::vector<PoolKey> out;
  out.reserve(held_.size());
  for (const auto& [key, n] : held_) out.push_back(key);
  return out;
}

}  // namespace batcher
