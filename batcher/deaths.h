#ifndef EDGEALLOC_BATCHER_DEATHS_H_
#define EDGEALLOC_BATCHER_DEATHS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "store/types.h"

namespace batcher {

// The reaper's line for one sweep that marked containers dead: how many, by
// region and pool, how long they had been silent, the first few ids, e.g.
//   reaper: 3 containers dead (2 silent, 1 reported dead): weur/chrome 2,
//   eeur/chrome 1; silent up to 31.2 s, median 30.4 s; weur-1, weur-2, eeur-5
// (one line). Pools past the first kDeathLinePools and ids past the first
// kDeathLineIds are counted, not named, so a region dying at once is still
// one short line. "" for none.
inline constexpr size_t kDeathLinePools = 5;
inline constexpr size_t kDeathLineIds = 5;
std::string DescribeDeaths(std::vector<store::DeadContainer> dead);

// Deaths of the last kRecentDeathsMs by region and pool, for the dashboard.
inline constexpr int64_t kRecentDeathsMs = 10 * 60 * 1000;

struct PoolDeaths {
  std::string region, pool;
  int64_t silent = 0, reported = 0;
  int64_t last_ms = 0;  // the newest death's time
};

// Keeps a count per pool of the deaths the reaper saw in the last
// kRecentDeathsMs, in minutes (at most eleven buckets a pool; pools with no
// death in the window are dropped at the next Add): bounded by the pools
// that died lately, never by how many died. Safe from any thread.
class RecentDeaths {
 public:
  void Add(int64_t now_ms, const std::vector<store::DeadContainer>& dead);
  // Every pool with a death in the window, the most deaths first.
  std::vector<PoolDeaths> Snapshot(int64_t now_ms) const;

 private:
  struct Minute {
    int64_t minute = 0;  // now_ms / 60000
    int64_t silent = 0, reported = 0, last_ms = 0;
  };
  // Drops the minutes before the window, and the pools left with none.
  void Prune(int64_t now_ms) REQUIRES(mu_);

  mutable base::Mutex mu_;
  // (region, pool) -> its minutes with deaths, oldest first.
  std::map<std::pair<std::string, std::string>, std::vector<Minute>> pools_ GUARDED_BY(mu_);
};

}  // namespace batcher

#endif  // EDGEALLOC_BATCHER_DEATHS_H_
