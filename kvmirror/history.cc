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
      series.available.push_back(kAbsent);
      series.picked.push_back(kAbsent);
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
        series->available.assign(earlier + 1, kAbsent);
        series->picked.assign(earlier + 1, kAbsent);
      }
      series->available.back() = counts.available;
      series->picked.back() = counts.picked;
    }
  }

  if (times_.size() > max_samples_) {
    times_.pop_front();
    for (auto r = regions_.begin(); r != regions_.end();) {
      Pools& pools = r->second;
      for (auto p = pools.begin(); p != pools.end();) {
        Series& s = p->second;
        s.available.pop_front();
        s.picked.pop_front();
        // A pool in none of the kept samples is gone from the history.
        if (std::all_of(s.available.begin(), s.available.end(),
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
    into->append("{\"available\":");
    AppendSeries(series.available, into);
    into->append(",\"picked\":");
    AppendSeries(series.picked, into);
    into->push_back('}');
  });
  out->push_back('}');
  json_.Store(std::move(out));
}

}  // namespace kvmirror
