#ifndef EDGEALLOC_KVMIRROR_SNAPSHOT_H_
#define EDGEALLOC_KVMIRROR_SNAPSHOT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace kvmirror {

// How many containers of one region and pool are in each state of the
// containers table (store/sqlite/schema.cc). A plain value.
struct StatusCounts {
  int64_t available = 0;
  int64_t picked = 0;
  int64_t draining = 0;
  int64_t dead = 0;
  // Of the draining ones, those an operator drained (the others drain by
  // their own report). Not a state of its own: not in total().
  int64_t drained = 0;
  // Slots (docs/api.md, "Slots"): of every container, whatever its state;
  // the live sessions on them; and the free slots of the available ones,
  // which claims may take (a draining or dead container's are not).
  int64_t slots = 0;
  int64_t slots_used = 0;
  int64_t slots_free = 0;

  int64_t total() const { return available + picked + draining + dead; }
  void Add(const StatusCounts& other);
  // Adds `n` to the field named `status` ("available", "picked", "draining",
  // "dead") and returns true; returns false, changing nothing, for any other
  // name (the schema's CHECK allows none, so a newer schema's state is not
  // guessed at).
  bool Add(std::string_view status, int64_t n);
  // Adds a state's `slots` and `used` slots; the free ones of an available
  // state to slots_free.
  void AddSlots(std::string_view status, int64_t slots, int64_t used);
  bool operator==(const StatusCounts&) const = default;
};

// The ids of the containers under an operator's drain, looked up by
// string_view (a heartbeat's ids) without a copy.
struct IdHash {
  using is_transparent = void;
  size_t operator()(std::string_view id) const { return std::hash<std::string_view>{}(id); }
};
using DrainedIds = std::unordered_set<std::string, IdHash, std::equal_to<>>;

// A Snapshot is the capacity of the pool as one read saw it: container counts
// by region, pool and state, in sorted order so that every rendering of it is
// stable, and the ids an operator drained. It is immutable once built, so any number of threads may read one
// shared Snapshot without locks; the Mirror publishes each as a
// shared_ptr<const Snapshot> and never changes it afterwards.
class Snapshot {
 public:
  // Sorted by name; std::less<> so a lookup takes a string_view.
  using Pools = std::map<std::string, StatusCounts, std::less<>>;
  using Regions = std::map<std::string, Pools, std::less<>>;

  // The empty snapshot: no regions, as_of_ms() == 0 ("nothing read yet").
  Snapshot();
  // A snapshot of `regions` as read by a read that began at `as_of_ms`
  // (milliseconds since the Unix epoch).
  // `version`: the mirror's number for it (version()).
  Snapshot(int64_t as_of_ms, Regions regions,
           std::shared_ptr<const DrainedIds> drained = nullptr, uint64_t version = 0);

  // Sums parts that each cover some regions (one part a shard). The result's
  // as_of_ms is the oldest of the parts', since that is the oldest data it
  // holds; it is 0 if any part is null (a shard not read yet) or none is
  // given. Counts of a region and pool found in several parts are added;
  // the drained ids are the parts' together. A version other than 0 is the
  // result's (a new snapshot even for one part); with 0, one part is
  // returned as it is.
  static std::shared_ptr<const Snapshot> Merge(
      const std::vector<std::shared_ptr<const Snapshot>>& parts, uint64_t version = 0);

  // When the read that built this began, in ms since the epoch; the oldest
  // data in it. 0 for the empty snapshot.
  int64_t as_of_ms() const { return as_of_ms_; }
  // How stale this is at `now_ms`: now_ms - as_of_ms(), never below 0 (the
  // system clock may step back). -1 for a snapshot with as_of_ms() == 0.
  int64_t AgeMs(int64_t now_ms) const;
  // The Mirror's number for this snapshot, one more at each publish; 0 for
  // one no Mirror published. Two snapshots of one mirror with the same
  // version are the same snapshot; two with the same as_of_ms need not be
  // (with several shards, a publish by any but the oldest keeps as_of_ms).
  uint64_t version() const { return version_; }

  const Regions& regions() const { return regions_; }
  // Sums over every region and pool.
  const StatusCounts& totals() const { return totals_; }
  // Sums over the pools of `region`; all zero for an unknown region.
  StatusCounts RegionTotals(std::string_view region) const;
  // The counts of one region and pool, or null if the snapshot has none.
  const StatusCounts* Find(std::string_view region, std::string_view pool) const;
  // Whether an operator drained container `id`, as of this snapshot.
  bool Drained(std::string_view id) const { return drained_->contains(id); }
  const std::shared_ptr<const DrainedIds>& drained_ids() const { return drained_; }

  // The body of GET /v1/capacity (docs/api.md), on one line, regions and pools in
  // name order:
  //   {"as_of_ms":1700000000000,"age_ms":12,"version":7,"regions":{"weur":{"pools":
  //   {"chrome":{"available":3,"picked":5,"draining":2,"dead":1,"drained":1,
  //   "slots":22,"slots_used":9,"slots_free":4}}}}}
  // age_ms is AgeMs(now_ms), or null for the empty snapshot (nothing has been
  // read, so no age can be told). Names are escaped for JSON: quote and
  // backslash, control characters as \u00XX, and bytes that are not valid
  // UTF-8 replaced by \ufffd, so the body is always valid JSON.
  std::string ToCapacityJson(int64_t now_ms) const;

 private:
  int64_t as_of_ms_ = 0;
  uint64_t version_ = 0;
  Regions regions_;
  StatusCounts totals_;
  std::shared_ptr<const DrainedIds> drained_;  // never null
  // The "regions" object, rendered once at construction: it never changes,
  // and /v1/capacity may be asked for far more often than it is refreshed.
  std::string regions_json_;
};


}  // namespace kvmirror

#endif  // EDGEALLOC_KVMIRROR_SNAPSHOT_H_
