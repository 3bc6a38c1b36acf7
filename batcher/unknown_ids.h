#ifndef EDGEALLOC_BATCHER_UNKNOWN_IDS_H_
#define EDGEALLOC_BATCHER_UNKNOWN_IDS_H_

#include <atomic>
#include <cstddef>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "batcher/heartbeat.h"
#include "store/types.h"

namespace batcher {

// Ids kept at most in RecentlyUnknown: a fleet's worth of typos, bounded so
// that a client inventing ids cannot grow the server.
inline constexpr size_t kRecentlyUnknownMax = 10000;

// The container ids whose latest heartbeat write found no container. The
// heartbeat reply is sent before the write, so this is how it can name an
// unknown id at all: from the request after the write that found it. An id
// leaves the set when a later write of it finds its container (registered
// meanwhile), or when it is the oldest of more than `capacity`. Safe from
// any thread.
class RecentlyUnknown {
 public:
  explicit RecentlyUnknown(size_t capacity = kRecentlyUnknownMax);
  RecentlyUnknown(const RecentlyUnknown&) = delete;
  RecentlyUnknown& operator=(const RecentlyUnknown&) = delete;

  // What one written batch found: rows[i] for each i in `unknown` has no
  // container (added, as the newest); every other row has one (removed).
  void Update(const std::vector<store::HeartbeatRow>& rows, const std::vector<size_t>& unknown);
  // Whether `id` is in the set.
  bool Contains(std::string_view id) const;
  // Appends to *named the ids of `items` in the set, in request order, each
  // once, unless already in *named; one lock for the request.
  void AppendNamed(const std::vector<Heartbeat>& items, std::vector<std::string>* named) const;
  size_t size() const { return size_.load(std::memory_order_relaxed); }

 private:
  void AddLocked(const std::string& id) REQUIRES(mu_);

  const size_t capacity_;
  mutable base::Mutex mu_;
  std::list<std::string> order_ GUARDED_BY(mu_);  // oldest first
  // Keys view the strings of order_, whose nodes never move.
  std::unordered_map<std::string_view, std::list<std::string>::iterator> where_ GUARDED_BY(mu_);
  // order_'s size, read without the lock: a batch or a request skips the
  // lock while nothing is unknown, the common case.
  std::atomic<size_t> size_{0};
};

}  // namespace batcher

#endif  // EDGEALLOC_BATCHER_UNKNOWN_IDS_H_
