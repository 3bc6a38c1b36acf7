#include "server/ops/metrics.h"

#include <string>
#include <vector>

#include "server/ops/exposition.h"

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

void AllocatorFamilies(const MetricsSources& src, Exposition* out) {
  if (src.allocator) {
    const allocator::AllocatorStats& a = *src.allocator;
    auto v = [](const std::atomic<uint64_t>& x) { return x.load(std::memory_order_relaxed); };
    out->Family("edgealloc_claims_total", "counter",
                "Claims answered, by result: ok (a new session), replayed (an idempotent "
                "retry), no_capacity, quota, error.");
    out->Sample("edgealloc_claims_total", {{"result", "ok"}}, v(a.claims_ok));
    out->Sample("edgealloc_claims_total", {{"result", "replayed"}}, v(a.claims_replayed));
    out->Sample("edgealloc_claims_total", {{"result", "no_capacity"}}, v(a.claims_no_capacity));
    out->Sample("edgealloc_claims_total", {{"result", "quota"}}, v(a.claims_quota));
    out->Sample("edgealloc_claims_total", {{"result", "error"}}, v(a.claims_error));
    if (src.pool_claims) {
      out->Family("edgealloc_pool_claims_total", "counter",
                  "Claims by pool: ok where a session was made, no_capacity where it was asked; "
                  "only pools that exist (edgealloc_claims_unknown_pool_total counts the rest).");
      for (const auto& [key, c] : src.pool_claims->PoolClaims()) {
        out->Sample("edgealloc_pool_claims_total",
                    {{"region", key.first}, {"pool", key.second}, {"result", "ok"}}, c.ok);
        out->Sample("edgealloc_pool_claims_total",
                    {{"region", key.first}, {"pool", key.second}, {"result", "no_capacity"}},
                    c.no_capacity);
      }
    }
    out->Family("edgealloc_claims_unknown_pool_total", "counter",
                "Claims refused (no_capacity) that named a region and pool with no container "
                "registered, all such names together.");
    out->Sample("edgealloc_claims_unknown_pool_total", v(a.claims_unknown_pool));
    out->Family("edgealloc_claim_waiters", "gauge",
                "Claims waiting (wait_ms) for a container now, every pool.");
    out->Sample("edgealloc_claim_waiters",
                static_cast<double>(a.waiting.load(std::memory_order_relaxed)));
    out->Family("edgealloc_claim_waits_total", "counter",
                "Claims that waited (wait_ms), by how the wait ended: served, timed_out, "
                "refused (a bound on waiting claims: per pool, per tenant or in all), "
                "abandoned (the client went away), unregistered (no container of its pool "
                "exists in its regions: answered at once).");
    out->Sample("edgealloc_claim_waits_total", {{"result", "served"}}, v(a.waits_served));
    out->Sample("edgealloc_claim_waits_total", {{"result", "timed_out"}}, v(a.waits_timed_out));
    out->Sample("edgealloc_claim_waits_total", {{"result", "refused"}}, v(a.waits_refused));
    out->Sample("edgealloc_claim_waits_total", {{"result", "abandoned"}}, v(a.waits_abandoned));
    out->Sample("edgealloc_claim_waits_total", {{"result", "unregistered"}},
                v(a.waits_unregistered));
    out->Family("edgealloc_claim_wait_probes_total", "counter",
                "Reads that probe the pools claims wait for (a waiting claim claims only when "
                "one finds a container it could take), by result.");
    out->Sample("edgealloc_claim_wait_probes_total", {{"result", "ok"}},
                v(a.wait_probes) - v(a.wait_probes_failed));
    out->Sample("edgealloc_claim_wait_probes_total", {{"result", "failed"}},
                v(a.wait_probes_failed));
    out->Family("edgealloc_releases_total", "counter", "Sessions released by their holder.");
    out->Sample("edgealloc_releases_total", v(a.releases));
    out->Family("edgealloc_renewals_total", "counter", "Session leases renewed.");
    out->Sample("edgealloc_renewals_total", v(a.renewals));
    out->Family("edgealloc_stale_tokens_total", "counter",
                "Session operations refused for a fencing token that is no longer current.");
    out->Sample("edgealloc_stale_tokens_total", v(a.stale_tokens));
    out->Family("edgealloc_lease_expiries_total", "counter",
                "Sessions released by the server because their lease expired.");
    out->Sample("edgealloc_lease_expiries_total", v(a.lease_expiries));
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

void BatcherFamilies(const batcher::Batcher& b, Exposition* out) {
  const batcher::BatcherStats& s = b.stats();
  auto v = [](const std::atomic<uint64_t>& x) { return x.load(std::memory_order_relaxed); };
  out->Family("edgealloc_heartbeats_accepted_total", "counter",
              "Heartbeats of requests taken whole (answered 202).");
  out->Sample("edgealloc_heartbeats_accepted_total", v(s.accepted));
  out->Family("edgealloc_heartbeats_refused_total", "counter",
              "Heartbeats of requests refused whole with 503: reason overloaded (a queue was "
              "full) or stopping (the server was shutting down).");
  out->Sample("edgealloc_heartbeats_refused_total", {{"reason", "overloaded"}}, v(s.refused));
  out->Sample("edgealloc_heartbeats_refused_total", {{"reason", "stopping"}},
              v(s.refused_stopping));
  out->Family("edgealloc_heartbeats_written_total", "counter",
              "Container rows updated by heartbeat batches.");
  out->Sample("edgealloc_heartbeats_written_total", v(s.written));
  out->Family("edgealloc_heartbeats_coalesced_total", "counter",
              "Heartbeats folded into a newer one of the same container in the same batch.");
  out->Sample("edgealloc_heartbeats_coalesced_total", v(s.coalesced));
  out->Family("edgealloc_heartbeats_unknown_total", "counter",
              "Heartbeats for containers that no shard holds, dropped.");
  out->Sample("edgealloc_heartbeats_unknown_total", v(s.unknown));
  out->Family("edgealloc_heartbeats_lost_total", "counter",
              "Accepted heartbeats given up on at shutdown because the store kept failing.");
  out->Sample("edgealloc_heartbeats_lost_total", v(s.lost));
  out->Family("edgealloc_heartbeat_batches_total", "counter",
              "Heartbeat transactions committed.");
  out->Sample("edgealloc_heartbeat_batches_total", v(s.batches));
  out->Family("edgealloc_containers_marked_dead_total", "counter",
              "Containers the reaper marked dead (silent too long or reported dead).");
  out->Sample("edgealloc_containers_marked_dead_total", v(s.dead_marked));

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

// The storage's writers, one a partition (labelled "shard", as the SQLite
// engine's partitions are its shard files).
void StoreFamilies(const store::Storage& storage, Exposition* out) {
  std::vector<std::string> names;
  for (int i = 0; i < storage.partitions(); ++i) names.push_back(std::to_string(i));
  auto each = [&](auto fn) {
    for (int i = 0; i < storage.partitions(); ++i) fn(names[i], storage.writer_stats(i));
  };
  using store::WriterStats;
  out->Family("edgealloc_store_transactions_total", "counter",
              "Write transactions committed by each shard's writer (group commits).");
  each([out](const std::string& shard, const WriterStats& s) {
    out->Sample("edgealloc_store_transactions_total", {{"shard", shard}},
                s.transactions.load(std::memory_order_relaxed));
  });
  out->Family("edgealloc_store_jobs_total", "counter",
              "Jobs of each shard's writer, by result: ok, failed, refused (queue full or "
              "stopping).");
  each([out](const std::string& shard, const WriterStats& s) {
    out->Sample("edgealloc_store_jobs_total", {{"shard", shard}, {"result", "ok"}},
                s.jobs_ok.load(std::memory_order_relaxed));
    out->Sample("edgealloc_store_jobs_total", {{"shard", shard}, {"result", "failed"}},
                s.jobs_failed.load(std::memory_order_relaxed));
    out->Sample("edgealloc_store_jobs_total", {{"shard", shard}, {"result", "refused"}},
                s.refused.load(std::memory_order_relaxed));
  });
  out->Family("edgealloc_store_commit_seconds_total", "counter",
              "Time each shard's writer spent committing, summed.");
  each([out](const std::string& shard, const WriterStats& s) {
    out->Sample("edgealloc_store_commit_seconds_total", {{"shard", shard}},
                static_cast<double>(s.commit_micros_total.load(std::memory_order_relaxed)) / 1e6);
  });
  out->Family("edgealloc_store_write_queue_depth", "gauge",
              "Jobs queued or in flight at each shard's writer.");
  each([out](const std::string& shard, const WriterStats& s) {
    out->Sample("edgealloc_store_write_queue_depth", {{"shard", shard}},
                static_cast<double>(s.queued.load(std::memory_order_relaxed)));
  });
  out->Family("edgealloc_store_groups_lost_total", "counter",
              "Write transactions that failed whole (every job of the group answered with the "
              "error): I/O errors, a full disk, a lost database connection.");
  each([out](const std::string& shard, const WriterStats& s) {
    out->Sample("edgealloc_store_groups_lost_total", {{"shard", shard}},
                s.transactions_lost.load(std::memory_order_relaxed));
  });
  out->Family("edgealloc_store_connected", "gauge",
              "1 while each writer has a working connection to its database (SQLite: always).");
  each([out](const std::string& shard, const WriterStats& s) {
    out->Sample("edgealloc_store_connected", {{"shard", shard}},
                static_cast<double>(s.connected.load(std::memory_order_relaxed)));
  });
  out->Family("edgealloc_store_reconnects_total", "counter",
              "Times each writer connected to its database again after losing the connection.");
  each([out](const std::string& shard, const WriterStats& s) {
    out->Sample("edgealloc_store_reconnects_total", {{"shard", shard}},
                s.reconnects.load(std::memory_order_relaxed));
  });
  out->Family("edgealloc_store_failing", "gauge",
              "1 while each writer cannot write (its last write or probe found the database "
              "unreachable); /readyz and heartbeats answer 503 meanwhile.");
  each([out](const std::string& shard, const WriterStats& s) {
    out->Sample("edgealloc_store_failing", {{"shard", shard}},
                static_cast<double>(s.failing.load(std::memory_order_relaxed)));
  });
  // PostgreSQL only: the database's clock is the fleet's; a node's offset
  // from it is what its logs' times are off by, nothing more.
  bool measured = false;
  for (int i = 0; i < storage.partitions(); ++i) {
    measured = measured || storage.writer_stats(i).clock_offset_known.load() != 0;
  }
  if (measured) {
    out->Family("edgealloc_db_clock_offset_seconds", "gauge",
                "The database's wall clock minus this node's, as each writer last measured it "
                "(PostgreSQL: leases, idempotency and silence are judged on the database's "
                "clock).");
    each([out](const std::string& shard, const WriterStats& s) {
      if (s.clock_offset_known.load(std::memory_order_relaxed) == 0) return;
      out->Sample("edgealloc_db_clock_offset_seconds", {{"shard", shard}},
                  static_cast<double>(s.clock_offset_ms.load(std::memory_order_relaxed)) / 1e3);
    });
  }
  out->Family("edgealloc_store_groups_rerun_total", "counter",
              "Groups each writer ran again job by job because one job failed on the fast path.");
  each([out](const std::string& shard, const WriterStats& s) {
    out->Sample("edgealloc_store_groups_rerun_total", {{"shard", shard}},
                s.groups_rerun.load(std::memory_order_relaxed));
  });
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
  if (src.storage != nullptr) StoreFamilies(*src.storage, &out);
  if (src.tenants) {
    const std::vector<MetricsSources::TenantSample> tenants = src.tenants();
    if (!tenants.empty()) {
      out.Family("edgealloc_tenant_claims_rate_limited_total", "counter",
                 "Claims refused 429 rate_limited on this node (past the tenant's claims_per_s), "
                 "by tenant of the keys file.");
      for (const auto& t : tenants) {
        out.Sample("edgealloc_tenant_claims_rate_limited_total", {{"tenant", t.tenant}},
                   t.claims_rate_limited);
      }
      out.Family("edgealloc_tenant_claim_waiters", "gauge",
                 "Claims waiting (wait_ms) on this node now, by tenant of the keys file.");
      for (const auto& t : tenants) {
        out.Sample("edgealloc_tenant_claim_waiters", {{"tenant", t.tenant}},
                   static_cast<double>(t.claims_waiting));
      }
    }
  }
  if (src.requests) {
    out.Family("edgealloc_http_requests_total", "counter",
               "HTTP requests answered, by route pattern (unmatched for unknown paths) and "
               "status code.");
    src.requests->ForEach([&out](const std::string& route, int status, uint64_t n) {
      out.Sample("edgealloc_http_requests_total",
                 {{"route", route}, {"status", std::to_string(status)}}, n);
    });
  }
  return out.Take();
}

}  // namespace server
