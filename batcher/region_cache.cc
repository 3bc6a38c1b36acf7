#include "batcher/region_cache.h"

#include <utility>

#include "base/clock.h"

namespace batcher {

int RegionCache::FindLocked(const std::string& id, bool* current) const {
  auto it = current_.find(id);
  *current = it != current_.end();
  if (*current) return it->second;
  it = previous_.find(id);
  return it == previous_.end() ? kUnknownRegion : it->second;
}

void RegionCache::Stamp(Heartbeat* items, size_t n) const {
  base::ReaderLock lock(&mu_);
  for (size_t i = 0; i < n; ++i) {
    bool current = false;
    items[i].region_index = FindLocked(items[i].container_id, &current);
    items[i].learn_region = !current;
  }
}

void RegionCache::MaybeNewGenerationLocked(int64_t now_ms) {
  if (now_ms - generation_start_ms_.load() < kGenerationMs && current_.size() < max_ids_) return;
  previous_ = std::move(current_);
  current_.clear();
  generation_start_ms_.store(now_ms);
}

void RegionCache::Learn(const std::vector<store::HeartbeatRow>& rows,
                        const store::HeartbeatWriteResult& result) {
  const int64_t now = base::SteadyNowMs();
  // Most writes find what the cache knows: looked at under the shared lock.
  std::vector<size_t> changed;  // of result.regions
  {
    base::ReaderLock lock(&mu_);
    for (size_t k = 0; k < result.regions.size(); ++k) {
      const auto it = current_.find(rows[result.regions[k].first].container_id);
      const auto name = index_of_.find(result.regions[k].second);
      if (it == current_.end() || name == index_of_.end() || it->second != name->second) {
        changed.push_back(k);
      }
    }
  }
  if (changed.empty() && now - generation_start_ms_.load() < kGenerationMs) return;
  base::WriterLock lock(&mu_);
  MaybeNewGenerationLocked(now);
  for (size_t k : changed) {
    const std::string& region = result.regions[k].second;
    const auto name = index_of_.try_emplace(region, static_cast<int>(names_.size())).first;
    if (name->second == static_cast<int>(names_.size())) names_.push_back(region);
    MaybeNewGenerationLocked(now);
    current_.insert_or_assign(rows[result.regions[k].first].container_id, name->second);
  }
}

int RegionCache::IndexOf(const std::string& region) const {
  base::ReaderLock lock(&mu_);
  const auto it = index_of_.find(region);
  return it == index_of_.end() ? kUnknownRegion : it->second;
}

size_t RegionCache::size() const {
  base::ReaderLock lock(&mu_);
  return current_.size() + previous_.size();
}

}  // namespace batcher
