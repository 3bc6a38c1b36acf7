#include "batcher/unknown_ids.h"

#include <algorithm>
#include <unordered_set>

namespace batcher {

RecentlyUnknown::RecentlyUnknown(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {}

void RecentlyUnknown::Update(const std::vector<store::HeartbeatRow>& rows,
                             const std::vector<size_t>& unknown) {
  if (unknown.empty() && size() == 0) return;
  std::vector<bool> is_unknown(rows.size(), false);
  for (size_t i : unknown) is_unknown[i] = true;
  base::MutexLock lock(&mu_);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (is_unknown[i]) {
      AddLocked(rows[i].container_id);
      continue;
    }
    auto it = where_.find(rows[i].container_id);
    if (it == where_.end()) continue;
    std::list<std::string>::iterator node = it->second;
    where_.erase(it);
    order_.erase(node);
  }
  size_.store(order_.size(), std::memory_order_relaxed);
}

void RecentlyUnknown::AddLocked(const std::string& id) {
  auto it = where_.find(id);
  if (it != where_.end()) {
    // Found unknown again: the newest now.
    order_.splice(order_.end(), order_, it->second);
    return;
  }
  if (order_.size() >= capacity_) {
    where_.erase(order_.front());
    order_.pop_front();
  }
  order_.push_back(id);
  where_.emplace(order_.back(), std::prev(order_.end()));
}

bool RecentlyUnknown::Contains(std::string_view id) const {
  if (size() == 0) return false;
  base::MutexLock lock(&mu_);
  return where_.count(id) != 0;
}

void RecentlyUnknown::AppendNamed(const std::vector<Heartbeat>& items,
                                  std::vector<std::string>* named) const {
  if (size() == 0) return;
  std::unordered_set<std::string_view> seen(named->begin(), named->end());
  std::vector<std::string> found;
  {
    base::MutexLock lock(&mu_);
    for (const Heartbeat& item : items) {
      const std::string_view id = item.container_id;
      if (where_.count(id) != 0 && seen.insert(id).second) found.push_back(item.container_id);
    }
  }
  for (std::string& id : found) named->push_back(std::move(id));
}

}  // namespace batcher
