#ifndef EDGEALLOC_KVMIRROR_WARM_BUFFER_H_
#define EDGEALLOC_KVMIRROR_WARM_BUFFER_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kvmirror/snapshot.h"

namespace kvmirror {

// The free slots a pool should keep, as an Agones fleet autoscaler's buffer
// (docs/api.md, "Pressure"): a count of slots, or a percentage: free slots
// at least that share of the pool's slots in use and free together.
struct WarmBuffer {
  int64_t slots = 0;    // a count (when percent is 0)
  int64_t percent = 0;  // 1 to 99: a percentage; 0: the count
  // "4" or "10%", as it was written.
  std::string ToString() const;
  bool operator==(const WarmBuffer&) const = default;
};

// The buffer of each pool: one for REGION/POOL, else one for POOL (in every
// region), else the default (none: 0 slots). A plain value.
class WarmBuffers {
 public:
  // Reads --warm-buffer values, each "N" or "P%" (the default), "POOL=N|P%"
  // or "REGION/POOL=N|P%"; a later one for the same pool wins. False with
  // *error saying what is wrong, in words for the flag's user.
  static bool Parse(const std::vector<std::string>& specs, WarmBuffers* out, std::string* error);
  // The error of a value, or of a comma-separated list of them; "" when
  // right (the flag's check).
  static std::string Check(std::string_view specs);

  const WarmBuffer& For(std::string_view region, std::string_view pool) const;

 private:
  WarmBuffer default_;
  std::map<std::string, WarmBuffer, std::less<>> by_pool_;         // POOL
  std::map<std::string, WarmBuffer, std::less<>> by_region_pool_;  // REGION/POOL
};

// The free slots `buffer` asks of a pool counted as `counts`: the count, or
// ceil(P * used / (100 - P)), so that free >= P% of used + free.
int64_t WantedFreeSlots(const WarmBuffer& buffer, const StatusCounts& counts);

// The containers to add to the pool so that, once its `waiting` claims took
// a slot each, its free slots are still at least the buffer's: the slots
// missing, divided by the pool's mean slots a container (rounded down, at
// least 1; 1 for a pool without containers), rounded up. 0 when none miss.
int64_t RecommendedBuffer(const WarmBuffer& buffer, const StatusCounts& counts, int64_t waiting);

}  // namespace kvmirror

#endif  // EDGEALLOC_KVMIRROR_WARM_BUFFER_H_
