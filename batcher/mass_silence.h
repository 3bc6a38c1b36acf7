#ifndef EDGEALLOC_BATCHER_MASS_SILENCE_H_
#define EDGEALLOC_BATCHER_MASS_SILENCE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "store/types.h"

namespace batcher {

// A pool is only in a mass silence with at least this many silent
// containers: two of three going quiet is more likely two deaths.
inline constexpr int64_t kMassSilenceMinContainers = 3;

using PoolKey = std::pair<std::string, std::string>;  // (region, pool)
using LiveByPool = std::map<PoolKey, int64_t>;

// Mass silence is suspect. When most of a pool (more than `fraction` of its
// live containers, at least kMassSilenceMinContainers), or of the fleet,
// goes silent in one window, that is more likely the server's or the
// network's fault than the containers': the pool is held. Its silent
// containers are not handed out (a claim takes only containers heard within
// dead_after_ms), but the sessions they hold end only after a longer grace
// (store::HeldPools). A held pool is let go once none of it is silent (its
// containers reported again, or the grace ended their sessions). The anchor
// is Kubernetes' node lifecycle controller, which stops evicting when a
// whole zone goes NotReady at once. Called from the reaper's thread;
// held_pools() and episodes() from any.
class MassSilence {
 public:
  // `log` gets one line when a pool is held and when it is let go.
  MassSilence(double fraction, int64_t grace_ms, std::function<void(const std::string&)> log);

  // The silent containers by pool now (Storage::CountSilent) against the
  // live ones (not dead, by the capacity mirror): the pools held from now on.
  std::vector<PoolKey> Update(const std::vector<store::PoolSilence>& silent,
                              const LiveByPool& live);

  int64_t held_pools() const { return held_count_.load(std::memory_order_relaxed); }
  // Pools that entered a mass silence since the start.
  uint64_t episodes() const { return episodes_.load(std::memory_order_relaxed); }

 private:
  const double fraction_;
  const int64_t grace_ms_;
  const std::function<void(const std::string&)> log_;
  std::map<PoolKey, int64_t> held_;  // pool -> silent when it was held
  std::atomic<int64_t> held_count_{0};
  std::atomic<uint64_t> episodes_{0};
};

}  // namespace batcher

#endif  // EDGEALLOC_BATCHER_MASS_SILENCE_H_
