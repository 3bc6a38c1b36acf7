#include "server/ops/metrics.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/ops/exposition.h"
#include "server/ops/region_metrics.h"
#include "server/ops/store_metrics.h"
#include "server/ops/tenant_metrics.h"

namespace server {
namespace {

// Writes a histogram family from cumulative bucket counts, read in ascending
// order so that each `le` bucket is at least the one before; _count is the
// +Inf bucket, so the two always agree as the format requires.
template <typename BoundFn, typename CumulativeFn>
void WriteHistogram(Exposition* out, std::string_view name, size_t bounds, BoundFn bound,
                    CumulativeFn cumulative, double sum) {
  const std::string bucket = std::string(name) + "_bucket";
  for (size_t i = 0; i < bounds; ++i) {
    out->Sample(bucket, {{"le", FormatValue(bound(i))}}, cumulative(i));
  }
  const uint64_t total = cumulative(bounds);
  out->Sample(bucket, {{"le", "+Inf"}}, total);
  out->Sample(std::string(name) + "_sum", sum);
  out->Sample(std::string(name) + "_count", total);
}

// A family of one unlabelled sample.
template <typename Value>
void One(Exposition* out, std::string_view name, std::string_view type, std::string_view help,
         Value value) {
  out->Family(name, type, help);
  out->Sample(name, value);
}

// A counter family with one label, a sample for each of its values.
void ByLabel(Exposition* out, std::string_view name, std::string_view help,
             std::string_view label,
             std::initializer_list<std::pair<std::string_view, uint64_t>> samples) {
  out->Family(name, "counter", help);
  for (const auto& [value, n] : samples) out->Sample(name, {{label, value}}, n);
}

void ClaimFamilies(const allocator::AllocatorStats& a, const allocator::Allocator* pool_claims,
                   Exposition* out) {
  ByLabel(out, "edgealloc_claims_total",
          "Claims answered, by result: ok (a new session), replayed (an idempotent retry), "
          "no_capacity, unknown_pool, quota, no_match (a selector that matches no registered "
          "container), error.",
          "result", {{"ok", Load(a.claims_ok)}, {"replayed", Load(a.claims_replayed)},
                     {"no_capacity", Load(a.claims_no_capacity)},
                     {"unknown_pool", Load(a.claims_unknown_pool)},
                     {"quota", Load(a.claims_quota)}, {"no_match", Load(a.claims_no_match)},
                     {"error", Load(a.claims_error)}});
  if (pool_claims) {
    out->Family("edgealloc_pool_claims_total", "counter",
                "Claims by pool: ok where a session was made, no_capacity where it was asked; "
                "only pools that exist (edgealloc_claims_unknown_pool_total counts the rest).");
    for (const auto& [key, c] : pool_claims->PoolClaims()) {
      out->Sample("edgealloc_pool_claims_total",
                  {{"region", key.first}, {"pool", key.second}, {"result", "ok"}}, c.ok);
      out->Sample("edgealloc_pool_claims_total",
                  {{"region", key.first}, {"pool", key.second}, {"result", "no_capacity"}},
                  c.no_capacity);
    }
  }
  One(out, "edgealloc_claims_unknown_pool_total", "counter",
      "Claims answered 404 unknown_pool (no container of the pool registered in any region "
      "they name), all such names together.",
      Load(a.claims_unknown_pool));
}

void WaitFamilies(const allocator::AllocatorStats& a, Exposition* out) {
  One(out, "edgealloc_claim_waiters", "gauge",
      "Claims waiting (wait_ms) for a container now, every pool.",
      static_cast<double>(a.waiting.load(std::memory_order_relaxed)));
  ByLabel(out, "edgealloc_claim_waits_total",
          "Claims that waited (wait_ms), by how the wait ended: served, timed_out, refused (a "
          "bound on waiting claims: per pool, per tenant or in all), abandoned (the client went "
          "away), unregistered (no container of its pool exists in its regions: answered at "
          "once), stalled (answered 503 unavailable, outcome unknown, while its claim was still with the database, "
          "a second past its wait_ms).",
          "result",
          {{"served", Load(a.waits_served)}, {"timed_out", Load(a.waits_timed_out)},
           {"refused", Load(a.waits_refused)}, {"abandoned", Load(a.waits_abandoned)},
           {"unregistered", Load(a.waits_unregistered)}, {"stalled", Load(a.waits_stalled)}});
  ByLabel(out, "edgealloc_claim_wait_probes_total",
          "Reads that probe the pools claims wait for (a waiting claim claims only when one "
          "finds a container it could take), by result.",
          "result",
          {{"ok", Load(a.wait_probes) - Load(a.wait_probes_failed)},
           {"failed", Load(a.wait_probes_failed)}});
  One(out, "edgealloc_claim_wait_claims_failed_total", "counter",
      "Claims a waiting claim made after a probe found a container it could take that got no "
      "session (another took it first, or the write failed).",
      Load(a.wait_claims_failed));
}

void SessionFamilies(const allocator::AllocatorStats& a, Exposition* out) {
  One(out, "edgealloc_releases_total", "counter", "Sessions released by their holder.",
      Load(a.releases));
  One(out, "edgealloc_renewals_total", "counter", "Session leases renewed.", Load(a.renewals));
  One(out, "edgealloc_stale_tokens_total", "counter",
      "Session operations refused for a fencing token that is no longer current.",
      Load(a.stale_tokens));
  One(out, "edgealloc_lease_expiries_total", "counter",
      "Sessions released by the server because their lease expired.", Load(a.lease_expiries));
}

// The sessions this node ended, by end reason (docs/api.md's end reasons):
// what its allocator and its dead reaper counted.
void SessionEndFamily(const MetricsSources& src, Exposition* out) {
  const allocator::AllocatorStats& a = *src.allocator;
  const uint64_t dead = src.batcher ? Load(src.batcher->stats().sessions_ended) : 0;
  ByLabel(out, "edgealloc_sessions_ended_total",
          "Sessions this node ended, by end reason (released counts releases by admin keys "
          "too).",
          "reason",
          {{"released", Load(a.sessions_released)},
           {"expired", Load(a.lease_expiries)},
           {"container_dead", dead},
           {"abandoned", Load(a.sessions_abandoned)}});
  One(out, "edgealloc_session_history_pruned_total", "counter",
      "Ended sessions pruned from the history (older than --session-history-ms or past "
      "--session-history-max-rows).",
      Load(a.history_pruned));
}

void AllocatorFamilies(const MetricsSources& src, Exposition* out) {
  if (src.allocator) {
    ClaimFamilies(*src.allocator, src.pool_claims, out);
    WaitFamilies(*src.allocator, out);
    SessionFamilies(*src.allocator, out);
    SessionEndFamily(src, out);
  }
  if (src.claim_latency) {
    const base::LatencyHistogram& h = *src.claim_latency;
    out->Family("edgealloc_claim_duration_seconds", "histogram",
                "Time from a parsed POST /v1/sessions to its reply being ready, for every claim "
                "that reached the allocator, whatever its result.");
    WriteHistogram(
        out, "edgealloc_claim_duration_seconds", base::LatencyHistogram::kBounds,
        [](size_t i) { return base::LatencyHistogram::BoundSeconds(i); },
        [&h](size_t i) { return h.CumulativeCount(i); }, h.SumSeconds());
  }
}

// Deafness is not death (batcher/hearing.h): the spans this node could not
// hear, by cause, and how long it has heard since the last.
void HearingFamilies(const batcher::Hearing& h, Exposition* out) {
  using Cause = batcher::Hearing::Cause;
  const Cause causes[] = {Cause::kPause, Cause::kIoStall, Cause::kWriteFailing, Cause::kRefused};
  out->Family("edgealloc_deaf_spans_total", "counter",
              "Spans of time this node could not hear its containers, by cause: pause, io_stall, "
              "write_failing, refused (docs/heartbeats-capacity-metrics.md).");
  for (Cause c : causes) {
    out->Sample("edgealloc_deaf_spans_total", {{"cause", batcher::Hearing::CauseName(c)}}, h.spans(c));
  }
  out->Family("edgealloc_deaf_seconds_total", "counter",
              "Seconds this node could not hear its containers, by cause.");
  for (Cause c : causes) {
    out->Sample("edgealloc_deaf_seconds_total", {{"cause", batcher::Hearing::CauseName(c)}},
                static_cast<double>(h.deaf_ms(c)) / 1e3);
  }
  One(out, "edgealloc_hearing_seconds", "gauge",
      "How long this node has heard its containers without a break; no container is judged "
      "silent while this is under --dead-after-ms.",
      static_cast<double>(h.HearingForMs()) / 1e3);
}

void BatcherFamilies(const batcher::Batcher& b, Exposition* out) {
  const batcher::BatcherStats& s = b.stats();
  One(out, "edgealloc_heartbeats_accepted_total", "counter",
      "Heartbeats of requests taken whole (answered 202).", Load(s.accepted));
  ByLabel(out, "edgealloc_heartbeats_refused_total",
          "Heartbeats of requests refused whole with 503: reason overloaded (a queue was full) "
          "or stopping (the server was shutting down).",
          "reason", {{"overloaded", Load(s.refused)}, {"stopping", Load(s.refused_stopping)}});
  One(out, "edgealloc_heartbeats_written_total", "counter",
      "Container rows updated by heartbeat batches.", Load(s.written));
  One(out, "edgealloc_heartbeats_coalesced_total", "counter",
      "Heartbeats folded into a newer one of the same container in the same batch.",
      Load(s.coalesced));
  One(out, "edgealloc_heartbeats_unknown_total", "counter",
      "Heartbeats for containers that no shard holds, dropped.", Load(s.unknown));
  One(out, "edgealloc_heartbeats_lost_total", "counter",
      "Accepted heartbeats given up on at shutdown because the store kept failing.", Load(s.lost));
  One(out, "edgealloc_heartbeat_batches_total", "counter", "Heartbeat transactions committed.",
      Load(s.batches));
  ByLabel(out, "edgealloc_containers_marked_dead_total",
          "Containers the reaper marked dead, by reason: silent (no heartbeat for "
          "--dead-after-ms) or reported (a held container that reported itself dead).",
          "reason", {{"silent", Load(s.dead_silent)}, {"reported", Load(s.dead_reported)}});

  HearingFamilies(b.hearing(), out);
  One(out, "edgealloc_mass_silence_pools", "gauge",
      "Pools held in a mass silence now: most of them silent at once; their sessions end only "
      "after --mass-silence-grace-ms.",
      static_cast<uint64_t>(b.mass_silence().held_pools()));
  One(out, "edgealloc_mass_silences_total", "counter", "Pools that entered a mass silence.",
      b.mass_silence().episodes());

  const batcher::Histogram& size = s.batch_size;
  out->Family("edgealloc_heartbeat_batch_size", "histogram",
              "Rows a heartbeat transaction wrote, after coalescing.");
  WriteHistogram(
      out, "edgealloc_heartbeat_batch_size", size.bounds(),
      [&size](size_t i) { return static_cast<double>(size.upper_bound(i)); },
      [&size](size_t i) { return size.CumulativeCount(i); }, static_cast<double>(size.sum()));
  const batcher::Histogram& lat = s.write_latency_us;
  out->Family("edgealloc_heartbeat_write_seconds", "histogram",
              "Time from handing a heartbeat batch to the shard's writer to its durable commit.");
  WriteHistogram(
      out, "edgealloc_heartbeat_write_seconds", lat.bounds(),
      [&lat](size_t i) { return static_cast<double>(lat.upper_bound(i)) / 1e6; },
      [&lat](size_t i) { return lat.CumulativeCount(i); }, static_cast<double>(lat.sum()) / 1e6);
  out->Family("edgealloc_heartbeat_queue_depth", "gauge",
              "Heartbeats queued, all shards, not yet taken into a batch.");
  out->Sample("edgealloc_heartbeat_queue_depth", static_cast<double>(b.QueueDepth()));
  out->Family("edgealloc_heartbeat_lane_lag_seconds", "gauge",
              "How long the oldest heartbeat of a shard's lane accepted and not yet written has "
              "waited (0: none); its lane judges silence only up to that heartbeat's acceptance.");
  for (int p = 0; p < b.partitions(); ++p) {
    out->Sample("edgealloc_heartbeat_lane_lag_seconds", {{"shard", std::to_string(p)}},
                static_cast<double>(b.LagMs(p)) / 1e3);
  }
}

// Slots by region, pool and state: used (a session each), free (an
// available container's, claimable) and unavailable (a draining or dead
// container's free ones); the three add up to the pool's slots.
void SlotFamily(const kvmirror::Snapshot& snap, Exposition* out) {
  out->Family("edgealloc_slots", "gauge",
              "Slots by region, pool and state (used, free: claimable, unavailable: a draining or "
              "dead container's), as of the capacity mirror's snapshot.");
  for (const auto& [region, pools] : snap.regions()) {
    for (const auto& [pool, c] : pools) {
      const int64_t unavailable = std::max<int64_t>(0, c.slots - c.slots_used - c.slots_free);
      const std::pair<const char*, int64_t> states[] = {
          {"used", c.slots_used}, {"free", c.slots_free}, {"unavailable", unavailable}};
      for (const auto& [state, n] : states) {
        out->Sample("edgealloc_slots", {{"region", region}, {"pool", pool}, {"state", state}},
                    static_cast<double>(n));
      }
    }
  }
}

void MirrorFamilies(const kvmirror::Mirror& m, int64_t now_ms, Exposition* out) {
  std::shared_ptr<const kvmirror::Snapshot> snap = m.Current();
  out->Family("edgealloc_containers", "gauge",
              "Containers by region, pool and state, as of the capacity mirror's snapshot.");
  for (const auto& [region, pools] : snap->regions()) {
    for (const auto& [pool, c] : pools) {
      const std::pair<const char*, int64_t> states[] = {
          {"available", c.available}, {"picked", c.picked}, {"draining", c.draining},
          {"dead", c.dead}};
      for (const auto& [state, n] : states) {
        out->Sample("edgealloc_containers", {{"region", region}, {"pool", pool}, {"state", state}},
                    static_cast<double>(n));
      }
    }
  }
  SlotFamily(*snap, out);
  out->Family("edgealloc_mirror_age_seconds", "gauge",
              "How stale the capacity mirror's snapshot is (absent until its first read).");
  const int64_t age_ms = snap->AgeMs(now_ms);
  if (age_ms >= 0) out->Sample("edgealloc_mirror_age_seconds", static_cast<double>(age_ms) / 1e3);
  const kvmirror::MirrorStats& s = m.stats();
  out->Family("edgealloc_mirror_refreshes_total", "counter",
              "Capacity mirror refreshes published, one a shard a period.");
  out->Sample("edgealloc_mirror_refreshes_total", s.refreshes.load(std::memory_order_relaxed));
  out->Family("edgealloc_mirror_refresh_errors_total", "counter",
              "Capacity mirror refreshes that failed; the previous counts stay published.");
  out->Sample("edgealloc_mirror_refresh_errors_total",
              s.refresh_errors.load(std::memory_order_relaxed));
}

}  // namespace

std::string RenderMetrics(const MetricsSources& src, int64_t now_ms) {
  Exposition out;
  if (const MetricsSources::BuildInfo& b = src.build_info; !b.version.empty()) {
    out.Family("edgealloc_build_info", "gauge",
               "Always 1; the labels say which build runs: version, commit, library versions.");
    out.Sample("edgealloc_build_info",
               {{"version", b.version},
                {"commit", b.commit},
                {"sqlite_version", b.sqlite_version},
                {"libpq_version", b.libpq_version}},
               uint64_t{1});
  }
  AllocatorFamilies(src, &out);
  if (src.batcher) BatcherFamilies(*src.batcher, &out);
  if (src.mirror) MirrorFamilies(*src.mirror, now_ms, &out);
  RegionFamilies(src, &out);
  if (src.storage != nullptr) StoreFamilies(*src.storage, &out);
  KeysFileFamilies(src, &out);
  if (src.requests) {
    out.Family("edgealloc_http_requests_total", "counter",
               "HTTP requests answered, by route pattern (unmatched for unknown paths) and "
               "status code.");
    src.requests->ForEach([&out](const std::string& route, int status, uint64_t n) {
      out.Sample("edgealloc_http_requests_total",
                 {{"route", route}, {"status", std::to_string(status)}}, n);
    });
  }
  if (src.http) {
    out.Family("edgealloc_http_request_deadlines_total", "counter",
               "Requests answered 503 unavailable because no answer came within "
               "--request-deadline-ms (a lost or stuck answer from the store).");
    out.Sample("edgealloc_http_request_deadlines_total", src.http->deadlines_passed());
  }
  return out.Take();
}

}  // namespace server
