#ifndef EDGEALLOC_BATCHER_REGION_CACHE_H_
#define EDGEALLOC_BATCHER_REGION_CACHE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "batcher/heartbeat.h"
#include "store/types.h"

namespace batcher {

// Which region each container is in, as this node's heartbeat writes found
// it (HeartbeatWriteResult::regions), so that a heartbeat's lag counts for
// its own region (Batcher::RegionLagMs): a lane carries the heartbeats of
// several regions (PostgreSQL spreads containers over its writers by id;
// a SQLite shard may hold several regions), and a heartbeat does not say its
// container's region. Learning costs no read of its own: PostgreSQL's write
// reads every row's region anyway; SQLite reads it only for a row whose
// container this cache does not know, or knows from the last generation.
// Two generations of at most max_ids each: a generation ends after
// kGenerationMs or when full, and an id known only from the one before is
// learned again by its next write, so a container a re-registration moved
// to another region is counted in its new one within two generations (on
// PostgreSQL, from its next write). Regions are kept as small indexes.
// Safe from any thread.
class RegionCache {
 public:
  static constexpr size_t kMaxIds = 1 << 20;
  static constexpr int64_t kGenerationMs = 30000;
  explicit RegionCache(size_t max_ids = kMaxIds) : max_ids_(max_ids) {}
  RegionCache(const RegionCache&) = delete;
  RegionCache& operator=(const RegionCache&) = delete;

  // Sets each item's region_index (kUnknownRegion if the cache does not
  // know its container) and learn_region (unknown, or known only from the
  // last generation).
  void Stamp(Heartbeat* items, size_t n) const;
  // Learns the regions a write of `rows` found.
  void Learn(const std::vector<store::HeartbeatRow>& rows,
             const store::HeartbeatWriteResult& result);
  // The index of `region`, or kUnknownRegion if no write found it yet.
  int IndexOf(const std::string& region) const;
  size_t size() const;

 private:
  int FindLocked(const std::string& id, bool* current) const REQUIRES_SHARED(mu_);
  // Starts a new generation if the current one is over.
  void MaybeNewGenerationLocked(int64_t now_ms) REQUIRES(mu_);

  const size_t max_ids_;
  mutable base::SharedMutex mu_;
  std::unordered_map<std::string, int> current_ GUARDED_BY(mu_);
  std::unordered_map<std::string, int> previous_ GUARDED_BY(mu_);
  std::atomic<int64_t> generation_start_ms_{0};  // steady
  std::vector<std::string> names_ GUARDED_BY(mu_);
  std::unordered_map<std::string, int> index_of_ GUARDED_BY(mu_);
};

}  // namespace batcher

#endif  // EDGEALLOC_BATCHER_REGION_CACHE_H_
