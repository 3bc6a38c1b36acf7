#ifndef EDGEALLOC_SERVER_OPS_EXPOSITION_H_
#define EDGEALLOC_SERVER_OPS_EXPOSITION_H_

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace server {

// The Prometheus text exposition format 0.0.4, as GET /metrics writes it;
// what is exported is metrics.h's.

// The Content-Type of GET /metrics: Prometheus text exposition format 0.0.4.
inline constexpr char kMetricsContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// A label value escaped for the text format: backslash, double quote and
// newline become \\, \" and \n; everything else is kept as it is.
std::string EscapeLabelValue(std::string_view value);

// A sample value as the text format writes it: integers without exponent or
// fraction, other finite values in the shortest form that reads back exactly,
// and +Inf, -Inf, NaN.
std::string FormatValue(double value);

using Labels = std::initializer_list<std::pair<std::string_view, std::string_view>>;

// An Exposition writes one scrape in text format 0.0.4: each family's
// `# HELP` and `# TYPE` line, then its samples. A family's samples must be
// written right after its Family() call, before the next one (the format
// wants them together). One thread; a fresh one per scrape.
class Exposition {
 public:
  // REQUIRES: `name` is a valid metric name; `type` is counter, gauge or histogram.
  void Family(std::string_view name, std::string_view type, std::string_view help);
  // One sample line `name{labels} value`; `name` may carry a suffix of the
  // family's (_bucket, _sum, _count). Label values are escaped here.
  void Sample(std::string_view name, Labels labels, double value);
  void Sample(std::string_view name, Labels labels, uint64_t value);
  void Sample(std::string_view name, double value) { Sample(name, {}, value); }
  void Sample(std::string_view name, uint64_t value) { Sample(name, {}, value); }

  // The text written so far; the Exposition is empty afterwards.
  std::string Take() { return std::move(out_); }

 private:
  void Line(std::string_view name, const std::vector<std::pair<std::string_view, std::string>>& labels,
            std::string_view value);
  std::string out_;
};

// A counter of the process, read for a sample: no order with other memory
// is needed, a scrape only wants a recent value.
inline uint64_t Load(const std::atomic<uint64_t>& x) { return x.load(std::memory_order_relaxed); }

}  // namespace server

#endif  // EDGEALLOC_SERVER_OPS_EXPOSITION_H_
