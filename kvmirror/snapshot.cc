#include "kvmirror/snapshot.h"

#include <algorithm>
#include <utility>

#include "kvmirror/regions_json.h"

namespace kvmirror {
namespace {

void AppendCounts(const StatusCounts& c, std::string* out) {
  out->append("{\"available\":").append(std::to_string(c.available));
  out->append(",\"picked\":").append(std::to_string(c.picked));
  out->append(",\"draining\":").append(std::to_string(c.draining));
  out->append(",\"dead\":").append(std::to_string(c.dead));
  out->append(",\"drained\":").append(std::to_string(c.drained));
  out->append(",\"slots\":").append(std::to_string(c.slots));
  out->append(",\"slots_used\":").append(std::to_string(c.slots_used));
  out->append(",\"slots_free\":").append(std::to_string(c.slots_free));
  out->push_back('}');
}

// The one empty set every snapshot without drained ids shares.
const std::shared_ptr<const DrainedIds>& NoDrainedIds() {
  static const auto* none = new std::shared_ptr<const DrainedIds>(std::make_shared<DrainedIds>());
  return *none;
}

}  // namespace

void StatusCounts::Add(const StatusCounts& other) {
  available += other.available;
  picked += other.picked;
  draining += other.draining;
  dead += other.dead;
  drained += other.drained;
  slots += other.slots;
  slots_used += other.slots_used;
  slots_free += other.slots_free;
}

void StatusCounts::AddSlots(std::string_view status, int64_t n, int64_t used) {
  slots += n;
  slots_used += used;
  // An available container has fewer sessions than slots (the schema's
  // CHECK); a picked one has none free, even with slots lowered under its
  // sessions.
  if (status == "available") slots_free += std::max<int64_t>(0, n - used);
}

bool StatusCounts::Add(std::string_view status, int64_t n) {
  if (status == "available") {
    available += n;
  } else if (status == "picked") {
    picked += n;
  } else if (status == "draining") {
    draining += n;
  } else if (status == "dead") {
    dead += n;
  } else {
    return false;
  }
  return true;
}

Snapshot::Snapshot() : drained_(NoDrainedIds()), regions_json_("{}") {}

Snapshot::Snapshot(int64_t as_of_ms, Regions regions, std::shared_ptr<const DrainedIds> drained,
                   uint64_t version)
    : as_of_ms_(as_of_ms),
      version_(version),
      regions_(std::move(regions)),
      drained_(drained != nullptr ? std::move(drained) : NoDrainedIds()) {
  AppendRegionsJson(regions_, &regions_json_, [this](const StatusCounts& counts, std::string* out) {
    AppendCounts(counts, out);
    totals_.Add(counts);
  });
}

std::shared_ptr<const Snapshot> Snapshot::Merge(
    const std::vector<std::shared_ptr<const Snapshot>>& parts, uint64_t version) {
  if (version == 0 && parts.size() == 1 && parts[0] != nullptr) return parts[0];  // nothing to add
  int64_t as_of_ms = parts.empty() ? 0 : INT64_MAX;
  Regions regions;
  // Shared, not copied, while only one part has drained ids (the usual case).
  std::shared_ptr<const DrainedIds> drained;
  std::shared_ptr<DrainedIds> joined;
  for (const auto& part : parts) {
    if (part == nullptr) {
      as_of_ms = 0;
      continue;
    }
    as_of_ms = std::min(as_of_ms, part->as_of_ms());
    for (const auto& [region, pools] : part->regions()) {
      Pools& into = regions[region];
      for (const auto& [pool, counts] : pools) into[pool].Add(counts);
    }
    if (part->drained_ids()->empty()) continue;
    if (drained == nullptr) {
      drained = part->drained_ids();
      continue;
    }
    if (joined == nullptr) {
      joined = std::make_shared<DrainedIds>(*drained);
      drained = joined;
    }
    joined->insert(part->drained_ids()->begin(), part->drained_ids()->end());
  }
  return std::make_shared<const Snapshot>(as_of_ms, std::move(regions), std::move(drained),
                                          version);
}

int64_t Snapshot::AgeMs(int64_t now_ms) const {
  if (as_of_ms_ == 0) return -1;
  return std::max<int64_t>(0, now_ms - as_of_ms_);
}

StatusCounts Snapshot::RegionTotals(std::string_view region) const {
  StatusCounts sum;
  auto it = regions_.find(region);
  if (it == regions_.end()) return sum;
  for (const auto& [pool, counts] : it->second) sum.Add(counts);
  return sum;
}

const StatusCounts* Snapshot::Find(std::string_view region, std::string_view pool) const {
  auto r = regions_.find(region);
  if (r == regions_.end()) return nullptr;
  auto p = r->second.find(pool);
  return p == r->second.end() ? nullptr : &p->second;
}

std::string Snapshot::ToCapacityJson(int64_t now_ms) const {
  std::string out;
  out.reserve(regions_json_.size() + 64);
  out.append("{\"as_of_ms\":").append(std::to_string(as_of_ms_));
  out.append(",\"age_ms\":");
  out.append(as_of_ms_ == 0 ? std::string("null") : std::to_string(AgeMs(now_ms)));
  out.append(",\"version\":").append(std::to_string(version_));
  out.append(",\"regions\":").append(regions_json_);
  out.push_back('}');
  return out;
}

}  // namespace kvmirror
