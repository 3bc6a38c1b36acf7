#include "kvmirror/warm_buffer.h"

#include <algorithm>
#include <charconv>
#include <utility>

namespace kvmirror {
namespace {

// The largest count a buffer may name: far above any pool (1024 slots a
// container), and far from overflow in the sums below.
constexpr int64_t kMaxBufferSlots = int64_t{1} << 40;

// "N" or "P%" into *out; an error for the flag's user, "" when right.
std::string ParseValue(std::string_view text, WarmBuffer* out) {
  const bool percent = !text.empty() && text.back() == '%';
  if (percent) text.remove_suffix(1);
  int64_t n = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || n < 0) {
    return "a warm buffer is a count of slots (4) or a percentage (10%)";
  }
  if (percent && (n < 1 || n > 99)) return "a warm buffer's percentage is from 1% to 99%";
  if (!percent && n > kMaxBufferSlots) return "a warm buffer's count is too large";
  *out = percent ? WarmBuffer{.slots = 0, .percent = n} : WarmBuffer{.slots = n, .percent = 0};
  return "";
}

// Splits "REGION/POOL=V", "POOL=V" or "V"; an error, "" when right.
std::string ParseSpec(std::string_view spec, std::string* region, std::string* pool,
                      WarmBuffer* value) {
  region->clear();
  pool->clear();
  const size_t eq = spec.rfind('=');
  if (eq != std::string_view::npos) {
    std::string_view name = spec.substr(0, eq);
    const size_t slash = name.find('/');
    if (slash != std::string_view::npos) {
      *region = std::string(name.substr(0, slash));
      name.remove_prefix(slash + 1);
      if (region->empty()) return "'" + std::string(spec) + "': REGION/POOL=N names a region";
    }
    *pool = std::string(name);
    if (pool->empty()) return "'" + std::string(spec) + "': POOL=N names a pool";
    spec.remove_prefix(eq + 1);
  }
  std::string error = ParseValue(spec, value);
  return error.empty() ? "" : "'" + std::string(spec) + "': " + error;
}

}  // namespace

std::string WarmBuffer::ToString() const {
  return percent > 0 ? std::to_string(percent) + "%" : std::to_string(slots);
}

std::string WarmBuffers::Check(std::string_view specs) {
  // A config file's list arrives joined by commas.
  for (;;) {
    const size_t comma = specs.find(',');
    std::string region, pool;
    WarmBuffer value;
    std::string error = ParseSpec(specs.substr(0, comma), &region, &pool, &value);
    if (!error.empty() || comma == std::string_view::npos) return error;
    specs.remove_prefix(comma + 1);
  }
}

bool WarmBuffers::Parse(const std::vector<std::string>& specs, WarmBuffers* out,
                        std::string* error) {
  WarmBuffers parsed;
  for (const std::string& spec : specs) {
    std::string region, pool;
    WarmBuffer value;
    *error = ParseSpec(spec, &region, &pool, &value);
    if (!error->empty()) return false;
    if (!region.empty()) {
      parsed.by_region_pool_[region + "/" + pool] = value;
    } else if (!pool.empty()) {
      parsed.by_pool_[pool] = value;
    } else {
      parsed.default_ = value;
    }
  }
  *out = std::move(parsed);
  return true;
}

const WarmBuffer& WarmBuffers::For(std::string_view region, std::string_view pool) const {
  if (!by_region_pool_.empty()) {
    std::string key;
    key.reserve(region.size() + pool.size() + 1);
    key.append(region).append("/").append(pool);
    if (auto it = by_region_pool_.find(key); it != by_region_pool_.end()) return it->second;
  }
  if (auto it = by_pool_.find(pool); it != by_pool_.end()) return it->second;
  return default_;
}

int64_t WantedFreeSlots(const WarmBuffer& buffer, const StatusCounts& counts) {
  if (buffer.percent <= 0) return buffer.slots;
  // free >= P/100 * (used + free)  <=>  free >= P * used / (100 - P).
  const int64_t used = std::max<int64_t>(0, counts.slots_used);
  const int64_t rest = 100 - buffer.percent;
  return (buffer.percent * used + rest - 1) / rest;
}

int64_t RecommendedBuffer(const WarmBuffer& buffer, const StatusCounts& counts, int64_t waiting) {
  const int64_t missing =
      WantedFreeSlots(buffer, counts) + std::max<int64_t>(0, waiting) - counts.slots_free;
  if (missing <= 0) return 0;
  const int64_t containers = counts.total();
  const int64_t per_container =
      containers > 0 ? std::max<int64_t>(1, counts.slots / containers) : 1;
  return (missing + per_container - 1) / per_container;
}

}  // namespace kvmirror
