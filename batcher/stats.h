#ifndef EDGEALLOC_BATCHER_STATS_H_
#define EDGEALLOC_BATCHER_STATS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "base/histogram.h"

namespace batcher {

// The batcher's histograms are store's (one class for every part's /metrics).
using Histogram = base::Histogram;

// The batch-size buckets (rows a transaction, after coalescing).
inline constexpr std::initializer_list<int64_t> kBatchSizeBuckets = {1, 2, 5, 10, 20, 50, 100};
// The write-latency buckets, in microseconds: from handing a batch to the
// shard's Writer to its durable commit (queueing at the writer included).
inline constexpr std::initializer_list<int64_t> kWriteLatencyBucketsUs = {
    500, 1000, 2000, 5000, 10000, 25000, 50000, 100000, 250000, 1000000};

// The counters of a Batcher, for /metrics and tests. Safe to read from any
// thread; written by Submit (io threads), the batching threads and the reaper.
// Counts are of heartbeats (items) unless they say otherwise. Once Stop()
// has returned: accepted == written + coalesced + unknown + lost.
struct BatcherStats {
  // Items of requests that were taken whole (the 202's N).
  std::atomic<uint64_t> accepted{0};
  // Items of requests refused whole because a queue was full (503 overloaded).
  std::atomic<uint64_t> refused{0};
  // Items of requests refused because Stop() had begun (503 while draining).
  std::atomic<uint64_t> refused_stopping{0};
  // Rows updated: a container's liveness was written (its report too, unless stale).
  std::atomic<uint64_t> written{0};
  // Of `written`, rows whose ts_ms was older than the stored one: liveness
  // only, the report itself changed nothing.
  std::atomic<uint64_t> stale{0};
  // Items folded into a newer item of the same container in the same batch.
  std::atomic<uint64_t> coalesced{0};
  // Items whose container exists in no shard: dropped at submit (several
  // shards) or matched no row at write time (edgealloc_heartbeats_unknown_total).
  std::atomic<uint64_t> unknown{0};
  // Transactions of heartbeat rows committed (one per batch).
  std::atomic<uint64_t> batches{0};
  // Attempts of a batch that the Writer refused or failed, retried with backoff.
  std::atomic<uint64_t> write_retries{0};
  // Items given up on: only when Stop() could not write them within
  // kStopGiveUpMs because the store kept failing. Zero in a healthy run.
  std::atomic<uint64_t> lost{0};
  // Containers the reaper marked dead, and the sessions of those it ended.
  std::atomic<uint64_t> dead_marked{0};
  std::atomic<uint64_t> sessions_ended{0};
  // Of dead_marked, by reason: silent past dead_after_ms, or a held container
  // that had reported itself dead (edgealloc_containers_marked_dead_total{reason}).
  std::atomic<uint64_t> dead_silent{0};
  std::atomic<uint64_t> dead_reported{0};

  // Rows a batch (after coalescing).
  Histogram batch_size{kBatchSizeBuckets};
  // Microseconds a batch took from hand-off to durable commit.
  Histogram write_latency_us{kWriteLatencyBucketsUs};
};

}  // namespace batcher

#endif  // EDGEALLOC_BATCHER_STATS_H_
