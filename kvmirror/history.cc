#include "kvmirror/history.h"

#include <algorithm>
#include <cassert>
#include <iterator>
#include <utility>

#include "kvmirror/regions_json.h"

namespace kvmirror {
namespace {

// -1 marks a sample the pool was not in.
constexpr int64_t kAbsent = -1;

// The body's series of a pool, in Series::values' order, and each one's
// count in a snapshot.
struct Field {
  const char* name;
  int64_t StatusCounts::*count;
};
constexpr Field kFields[] = {
    {"available", &StatusCounts::available}, {"picked", &StatusCounts::picked},
    {"slots", &StatusCounts::slots},         {"slots_used", &StatusCounts::slots_used},
    {"slots_free", &StatusCounts::slots_free},
};

void AppendSeries(const std::deque<int64_t>& values, std::string* out) {
  out->push_back('[');
  bool first = true;
  for (int64_t v : values) {
    if (!first) out->push_back(',');
    first = false;
    out->append(v == kAbsent ? std::string("null") : std::to_string(v));
  }
  out->push_back(']');
}

static_assert(std::size(kFields) == CapacityHistory::kSeriesFields);

}  // namespace

CapacityHistory::CapacityHistory(int64_t interval_ms, int max_samples, size_t max_pools)
    : interval_ms_(interval_ms),
      max_samples_(static_cast<size_t>(max_samples)),
      max_pools_(max_pools) {
  assert(interval_ms > 0 && max_samples > 0);
  base::MutexLock lock(&mu_);
  Render();
}

bool CapacityHistory::Add(const Snapshot& snap) {
  if (snap.as_of_ms() <= 0) return false;
  const int64_t slot = snap.as_of_ms() / interval_ms_;
  base::MutexLock lock(&mu_);
  if (slot <= last_slot_) return false;
  last_slot_ = slot;
  const size_t earlier = times_.size();
  times_.push_back(snap.as_of_ms());

  // Every kept pool gets an entry for this sample: absent unless the
  // snapshot has it.
  for (auto& [region, pools] : regions_) {
    for (auto& [pool, series] : pools) {
      for (auto& values : series.values) values.push_back(kAbsent);
    }
  }
  omitted_ = 0;
  for (const auto& [region, pools] : snap.regions()) {
    for (const auto& [pool, counts] : pools) {
      auto r = regions_.find(region);
      Series* series = nullptr;
      if (r != regions_.end()) {
        auto p = r->second.find(pool);
        if (p != r->second.end()) series = &p->second;
      }
      if (series == nullptr) {
        if (pools_ >= max_pools_) {
          ++omitted_;
          continue;
        }
        ++pools_;
        series = &regions_[region][pool];
        for (auto& values : series->values) values.assign(earlier + 1, kAbsent);
      }
      for (size_t f = 0; f < kSeriesFields; ++f) series->values[f].back() = counts.*kFields[f].count;
    }
  }

  if (times_.size() > max_samples_) {
    times_.pop_front();
    for (auto r = regions_.begin(); r != regions_.end();) {
      Pools& pools = r->second;
      for (auto p = pools.begin(); p != pools.end();) {
        Series& s = p->second;
        for (auto& values : s.values) values.pop_front();
        // A pool in none of the kept samples is gone from the history.
        if (std::all_of(s.values[0].begin(), s.values[0].end(),
                        [](int64_t v) { return v == kAbsent; })) {
          p = pools.erase(p);
          --pools_;
        } else {
          ++p;
        }
      }
      r = pools.empty() ? regions_.erase(r) : std::next(r);
    }
  }
  Render();
  return true;
}

void CapacityHistory::Render() {
  auto out = std::make_shared<std::string>();
  out->append("{\"interval_ms\":").append(std::to_string(interval_ms_));
  out->append(",\"pools_omitted\":").append(std::to_string(omitted_));
  out->append(",\"as_of_ms\":");
  AppendSeries(times_, out.get());
  out->append(",\"regions\":");
  AppendRegionsJson(regions_, out.get(), [](const Series& series, std::string* into) {
    for (size_t f = 0; f < kSeriesFields; ++f) {
      into->append(f == 0 ? "{\"" : ",\"").append(kFields[f].name).append("\":");
      AppendSeries(series.values[f], into);
    }
    into->push_back('}');
  });
  out->push_back('}');
  json_.Store(std::move(out));
}

}  // namespace kvmirror
