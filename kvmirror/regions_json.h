#ifndef EDGEALLOC_KVMIRROR_REGIONS_JSON_H_
#define EDGEALLOC_KVMIRROR_REGIONS_JSON_H_

#include <string>

#include "base/json_string.h"

namespace kvmirror {

// Appends {"<key>":<value>,...} for a map keyed by strings, each value
// written by `append_value(value, out)`.
template <typename Map, typename AppendValue>
void AppendJsonObject(const Map& map, std::string* out, AppendValue append_value) {
  out->push_back('{');
  bool first = true;
  for (const auto& [key, value] : map) {
    if (!first) out->push_back(',');
    first = false;
    base::AppendJsonString(key, out);
    out->push_back(':');
    append_value(value, out);
  }
  out->push_back('}');
}

// Appends {"<region>":{"pools":{"<pool>":...,...}},...}: the nesting of
// /v1/capacity and of the capacity history, for a map of regions to maps of
// pools, each pool's value written by `append_pool(value, out)`.
template <typename Regions, typename AppendPool>
void AppendRegionsJson(const Regions& regions, std::string* out, AppendPool append_pool) {
  AppendJsonObject(regions, out, [&append_pool](const auto& pools, std::string* into) {
    into->append("{\"pools\":");
    AppendJsonObject(pools, into, append_pool);
    into->push_back('}');
  });
}

}  // namespace kvmirror

#endif  // EDGEALLOC_KVMIRROR_REGIONS_JSON_H_
