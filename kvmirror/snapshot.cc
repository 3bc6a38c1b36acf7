#include "kvmirror/snapshot.h"

#include <algorithm>
#include <utility>

namespace kvmirror {
namespace {

// The length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms,
// no surrogates, nothing above U+10FFFF) that starts s[i], or 0 if none does.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return len;
}

void AppendCounts(const StatusCounts& c, std::string* out) {
  out->append("{\"available\":").append(std::to_string(c.available));
  out->append(",\"picked\":").append(std::to_string(c.picked));
  out->append(",\"draining\":").append(std::to_string(c.draining));
  out->append(",\"dead\":").append(std::to_string(c.dead));
  out->push_back('}');
}

}  // namespace

void StatusCounts::Add(const StatusCounts& other) {
  available += other.available;
  picked += other.picked;
  draining += other.draining;
  dead += other.dead;
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

void AppendJsonString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
      ++i;
    } else if (c < 0x20) {
      out->append("\\u00");
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 0xF]);
      ++i;
    } else if (c < 0x80) {
      out->push_back(static_cast<char>(c));
      ++i;
    } else if (size_t len = Utf8SequenceLength(s, i); len > 0) {
      out->append(s.substr(i, len));
      i += len;
    } else {
      out->append("\\ufffd");  // one replacement per byte that starts nothing valid
      ++i;
    }
  }
  out->push_back('"');
}

Snapshot::Snapshot() : regions_json_("{}") {}

Snapshot::Snapshot(int64_t as_of_ms, Regions regions)
    : as_of_ms_(as_of_ms), regions_(std::move(regions)) {
  regions_json_.push_back('{');
  bool first_region = true;
  for (const auto& [region, pools] : regions_) {
    if (!first_region) regions_json_.push_back(',');
    first_region = false;
    AppendJsonString(region, &regions_json_);
    regions_json_.append(":{\"pools\":{");
    bool first_pool = true;
    for (const auto& [pool, counts] : pools) {
      if (!first_pool) regions_json_.push_back(',');
      first_pool = false;
      AppendJsonString(pool, &regions_json_);
      regions_json_.push_back(':');
      AppendCounts(counts, &regions_json_);
      totals_.Add(counts);
    }
    regions_json_.append("}}");
  }
  regions_json_.push_back('}');
}

std::shared_ptr<const Snapshot> Snapshot::Merge(
    const std::vector<std::shared_ptr<const Snapshot>>& parts) {
  if (parts.size() == 1 && parts[0] != nullptr) return parts[0];  // nothing to add
  int64_t as_of_ms = parts.empty() ? 0 : INT64_MAX;
  Regions regions;
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
  }
  return std::make_shared<const Snapshot>(as_of_ms, std::move(regions));
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
  out.append(",\"regions\":").append(regions_json_);
  out.push_back('}');
  return out;
}

}  // namespace kvmirror
