#ifndef EDGEALLOC_STORE_POSTGRES_LANE_H_
#define EDGEALLOC_STORE_POSTGRES_LANE_H_

#include <cstdint>
#include <string_view>

namespace store {

// The hash a container's heartbeat partition is taken from: FNV-1a (32
// bits) of its id, kept non-negative for SQL's `%`. Stored with the row
// (containers.lane_hash) so that a partition's sweep selects its containers
// in SQL; so it must never change: every node, every version, computes the
// same value for an id.
inline int32_t LaneHash(std::string_view id) {
  uint32_t h = 2166136261u;
  for (unsigned char c : id) {
    h ^= c;
    h *= 16777619u;
  }
  return static_cast<int32_t>(h & 0x7fffffffu);
}

// The partition of `id` on a node with `partitions` heartbeat writers.
inline int LaneOf(std::string_view id, int partitions) {
  return LaneHash(id) % partitions;
}

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_LANE_H_
