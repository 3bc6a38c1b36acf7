#include "server/ops/store_metrics.h"

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace server {
namespace {

// One family of the storage's writers, a sample each (labelled "shard", as
// the SQLite engine's partitions are its shard files); `value` reads a
// writer's stats, nullopt for none.
template <typename ValueOf>
void PerWriter(const store::Storage& storage, Exposition* out, std::string_view name,
               std::string_view type, std::string_view help, ValueOf value) {
  out->Family(name, type, help);
  for (int i = 0; i < storage.partitions(); ++i) {
    const auto v = value(storage.writer_stats(i));
    if (v) out->Sample(name, {{"shard", std::to_string(i)}}, *v);
  }
}

// A writer's counter or gauge, as PerWriter reads it.
std::optional<uint64_t> Count(const std::atomic<uint64_t>& x) { return Load(x); }
template <typename T>
std::optional<double> Gauge(const std::atomic<T>& x, double scale = 1) {
  return static_cast<double>(x.load(std::memory_order_relaxed)) / scale;
}

// Whether each writer can write, and how it has fared with its connection.
void WriterHealthFamilies(const store::Storage& storage, Exposition* out) {
  using store::WriterStats;
  PerWriter(storage, out, "edgealloc_store_groups_lost_total", "counter",
            "Write transactions that failed whole (every job of the group answered with the "
            "error): I/O errors, a full disk, a lost database connection.",
            [](const WriterStats& s) { return Count(s.transactions_lost); });
  PerWriter(storage, out, "edgealloc_store_connected", "gauge",
            "1 while each writer has a working connection to its database (SQLite: always).",
            [](const WriterStats& s) { return Gauge(s.connected); });
  PerWriter(storage, out, "edgealloc_store_reconnects_total", "counter",
            "Times each writer connected to its database again after losing the connection.",
            [](const WriterStats& s) { return Count(s.reconnects); });
  PerWriter(storage, out, "edgealloc_store_failing", "gauge",
            "1 while each writer cannot write (its last write or probe found the database "
            "unreachable); /readyz and heartbeats answer 503 meanwhile.",
            [](const WriterStats& s) { return Gauge(s.failing); });
  // PostgreSQL only: the database's clock is the fleet's; a node's offset
  // from it is what its logs' times are off by, nothing more.
  bool measured = false;
  for (int i = 0; i < storage.partitions(); ++i) {
    measured = measured || storage.writer_stats(i).clock_offset_known.load() != 0;
  }
  if (measured) {
    PerWriter(storage, out, "edgealloc_db_clock_offset_seconds", "gauge",
              "The database's wall clock minus this node's, as each writer last measured it "
              "(PostgreSQL: leases, idempotency and silence are judged on the database's clock).",
              [](const WriterStats& s) -> std::optional<double> {
                if (s.clock_offset_known.load(std::memory_order_relaxed) == 0) return std::nullopt;
                return Gauge(s.clock_offset_ms, 1e3);
              });
  }
  // PostgreSQL only: the fence against an old primary back after a failover.
  if (const store::Storage::FenceStats fence = storage.fence_stats(); fence.fenced) {
    out->Family("edgealloc_db_fence_epoch", "gauge",
                "The highest fence epoch this node has seen (PostgreSQL: one more each "
                "promotion); it connects to no primary below it.");
    out->Sample("edgealloc_db_fence_epoch", static_cast<double>(fence.epoch));
    out->Family("edgealloc_db_fenced_total", "counter",
                "Connects this node refused because the primary was below its fence epoch (an "
                "old primary back after a failover); nothing was written there.");
    out->Sample("edgealloc_db_fenced_total", fence.refusals);
  }
  PerWriter(storage, out, "edgealloc_store_groups_rerun_total", "counter",
            "Groups each writer ran again job by job because one job failed on the fast path.",
            [](const WriterStats& s) { return Count(s.groups_rerun); });
  PerWriter(storage, out, "edgealloc_store_writer_exceptions_total", "counter",
            "Exceptions each writer caught from its engine (beginning a group, COMMIT, its "
            "probe): each failed its group, never the process.",
            [](const WriterStats& s) { return Count(s.writer_exceptions); });
  PerWriter(storage, out, "edgealloc_store_commits_not_replicated_total", "counter",
            "COMMITs that succeeded with a warning (PostgreSQL: the wait for the synchronous "
            "standby was cancelled); their jobs were answered outcome unknown.",
            [](const WriterStats& s) { return Count(s.commits_not_replicated); });
  PerWriter(storage, out, "edgealloc_store_heartbeat_rows_skipped_total", "counter",
            "Heartbeat rows a batch skipped because another transaction held their container's "
            "row (PostgreSQL; each try counts); each is written later.",
            [](const WriterStats& s) { return Count(s.heartbeat_rows_skipped); });
  PerWriter(storage, out, "edgealloc_store_heartbeat_rows_deferred", "gauge",
            "Heartbeat rows skipped for a lock and kept for a later write, now.",
            [](const WriterStats& s) { return Gauge(s.heartbeat_rows_deferred); });
  PerWriter(storage, out, "edgealloc_store_selector_claims_rechecked_total", "counter",
            "Claims under a selector whose first, open-rows statement took nothing, so that the "
            "statement checking every candidate ran after it (SQLite).",
            [](const WriterStats& s) { return Count(s.selector_claims_rechecked); });
}

}  // namespace

void StoreFamilies(const store::Storage& storage, Exposition* out) {
  using store::WriterStats;
  PerWriter(storage, out, "edgealloc_store_transactions_total", "counter",
            "Write transactions committed by each shard's writer (group commits).",
            [](const WriterStats& s) { return Count(s.transactions); });
  out->Family("edgealloc_store_jobs_total", "counter",
              "Jobs of each shard's writer, by result: ok, failed, refused (queue full or "
              "stopping).");
  for (int i = 0; i < storage.partitions(); ++i) {
    const WriterStats& s = storage.writer_stats(i);
    const std::string shard = std::to_string(i);
    for (const auto& [result, n] : {std::pair{"ok", Load(s.jobs_ok)},
                                    std::pair{"failed", Load(s.jobs_failed)},
                                    std::pair{"refused", Load(s.refused)}}) {
      out->Sample("edgealloc_store_jobs_total", {{"shard", shard}, {"result", result}}, n);
    }
  }
  PerWriter(storage, out, "edgealloc_store_commit_seconds_total", "counter",
            "Time each shard's writer spent committing, summed.",
            [](const WriterStats& s) { return Gauge(s.commit_micros_total, 1e6); });
  PerWriter(storage, out, "edgealloc_store_write_queue_depth", "gauge",
            "Jobs queued or in flight at each shard's writer.",
            [](const WriterStats& s) { return Gauge(s.queued); });
  WriterHealthFamilies(storage, out);
  if (const std::optional<uint64_t> steps = storage.clock_steps()) {
    out->Family("edgealloc_clock_steps_total", "counter",
                "Steps of the wall clock that leases and silences are judged on (SQLite: this "
                "node's; PostgreSQL: the database host's), found against this node's monotonic "
                "clock; each is applied to the stored lease ends and heartbeats (on PostgreSQL "
                "by one node of the fleet, which counts it).");
    out->Sample("edgealloc_clock_steps_total", *steps);
  }
}

}  // namespace server
