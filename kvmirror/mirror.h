#ifndef EDGEALLOC_KVMIRROR_MIRROR_H_
#define EDGEALLOC_KVMIRROR_MIRROR_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "base/shared_slot.h"
#include "kvmirror/history.h"
#include "kvmirror/snapshot.h"
#include "store/status.h"
#include "store/storage.h"

namespace kvmirror {

// Bounds of a refresh period, in ms; the constructor clamps into them (the
// server's --mirror-refresh-ms accepts from 1 ms, and an hour is far beyond
// any useful staleness).
inline constexpr int64_t kMinRefreshMs = 1;
inline constexpr int64_t kMaxRefreshMs = 3600 * 1000;

// The share of one core a shard's refreshes may take, by default. A refresh
// reads every row once (the GROUP BY above), so its cost grows with the pool:
// about 0.1 s of CPU at 1,000,000 containers, a tenth of a core at the
// default 1 s period, taken from claims on a 2-core machine. A period is
// stretched, up to kMaxStretchedRefreshMs, so that refreshes use at most this
// share; the snapshot's age (age_ms, edgealloc_mirror_age_seconds) says how
// stale that makes it. Pools of up to ~100,000 containers keep their period.
inline constexpr double kDefaultMaxCpuShare = 0.05;
// The longest a stretched period becomes (a configured period above it is
// kept as it is).
inline constexpr int64_t kMaxStretchedRefreshMs = 30 * 1000;

// The wait for the storage's locks that a mirror's readers should be made
// with (Storage::NewCapacityReader): a reader rarely waits (SQLite: only for
// the recovery of a crashed writer's WAL), and the bound keeps Stop() prompt
// even then. A refresh that fails is counted and retried next period.
inline constexpr int kReaderBusyTimeoutMs = 250;

struct MirrorOptions {
  // See kDefaultMaxCpuShare; in (0, 1], clamped. 1 turns the stretch off for
  // any refresh cheaper than its period.
  double max_cpu_share = kDefaultMaxCpuShare;
  // Test hook: called on the refreshing thread after a shard's part has been
  // read and built and before it is published, with the shard's index. A test
  // blocks in it to show that readers of Current() go on meanwhile. With
  // several shards it may run on several threads at once. Stop() waits for a
  // call in progress to return.
  std::function<void(int shard)> before_publish;
  // The capacity history's sampling interval (CapacityHistory); at least 1.
  int64_t history_interval_ms = kDefaultHistoryIntervalMs;
};

// Counters of a Mirror, for /metrics. Written by the refreshing threads, read
// from any thread; each is a relaxed atomic, so two of them read together may
// be one refresh apart.
struct MirrorStats {
  // Shard refreshes published (one per shard per period).
  std::atomic<uint64_t> refreshes{0};
  // Shard refreshes that failed (open or read error); the shard's previous
  // part stays published, so the snapshot's age grows instead of it emptying.
  std::atomic<uint64_t> refresh_errors{0};
  // Read-and-build time of the latest shard refresh, and the sum of them all.
  std::atomic<uint64_t> last_refresh_micros{0};
  std::atomic<uint64_t> total_refresh_micros{0};
  // Shard refreshes that found the file unchanged since their previous read
  // (PRAGMA data_version) and republished that read's counts as of now
  // without reading again: an idle pool costs nothing, whatever its size.
  // Counted in refreshes too.
  std::atomic<uint64_t> unchanged{0};
  // The CPU time of the latest shard read (thread CPU, not wall: on a busy
  // machine the wall time includes waiting for a core), in microseconds.
  std::atomic<uint64_t> last_read_cpu_micros{0};
  // The period the latest shard refresh set for its next one, in ms:
  // refresh_ms(), or longer when that read cost more than max_cpu_share of
  // the period.
  std::atomic<int64_t> period_ms{0};
};

// A Mirror is the eventually consistent view of the pool's capacity
// (docs/design.md, kvmirror/): one background thread per storage partition
// (named "mirror-<partition>") reads the counts with a CapacityReader of its
// own every refresh period (stretched for a pool so large that reading it
// every period would cost more than max_cpu_share of a core; skipped, the
// counts republished, when nothing was committed since the last read), and
// the merged Snapshot is published through a base::SharedSlot (a mutex-held shared_ptr).
// Current() is safe from any thread and never touches storage nor waits for
// a refresh: it only loads the pointer. The Mirror owns its threads and
// readers; the caller owns the Mirror and must Stop() (or destroy) it before
// the storage goes; Start() and Stop() are for that owning thread.
class Mirror {
 public:
  // A mirror of the partitions `readers` read (Storage::NewCapacityReader
  // of each), refreshed every `refresh_ms`, clamped into [kMinRefreshMs,
  // kMaxRefreshMs] (each partition's period stretched as
  // MirrorOptions::max_cpu_share says). Reads nothing until Start() or
  // RefreshNow(). REQUIRES: !readers.empty().
  Mirror(std::vector<std::unique_ptr<store::CapacityReader>> readers, int64_t refresh_ms,
         MirrorOptions options = {});
  Mirror(const Mirror&) = delete;
  Mirror& operator=(const Mirror&) = delete;
  // Stops if running.
  ~Mirror();

  // Refreshes every shard once on the calling thread, so that a served mirror
  // is never empty, then starts one refresh thread per shard. Returns Ok; or
  // the first shard's open or read error (IOError, Busy, Corruption,
  // InvalidArgument for a file without the containers table), and then no
  // thread is started, Start() may be tried again, and Current() holds
  // whatever shards did succeed (with as_of_ms() == 0 while any is unread).
  // REQUIRES: not started successfully before.
  store::Status Start();

  // Wakes the refresh threads and joins them: returns as soon as a read in
  // progress ends, well within one refresh period, never waiting out the
  // period itself. Current() stays valid and keeps the last snapshot.
  // Idempotent; safe to call without Start().
  void Stop();

  // Reads every shard and publishes once, on the calling thread, waiting for a
  // refresh of the same shard in progress on another thread. For tests and
  // tools. Returns Ok, or the first shard's error (the other shards are still
  // refreshed; the failed one keeps its previous part).
  store::Status RefreshNow();

  // The latest published snapshot; never null. Until the first refresh it is
  // the empty snapshot (no regions, as_of_ms() == 0). Once every shard has
  // been read, as_of_ms() is the oldest of the shards' reads. Lock-free for
  // the caller in the sense that matters: it never waits for storage or for a
  // refresh being built.
  std::shared_ptr<const Snapshot> Current() const { return current_.Load(); }

  int64_t refresh_ms() const { return refresh_ms_; }
  const MirrorStats& stats() const { return stats_; }
  // The utilisation history of every pool, sampled from the snapshots this
  // mirror publishes (GET /v1/capacity/history). Safe from any thread.
  const CapacityHistory& history() const { return history_; }
  // The message of the latest refresh error, "" if none has happened.
  std::string last_error() const;

 private:
  // One partition and its reader. The reader belongs to whichever thread
  // holds refresh_mu: the partition's refresh thread, or a caller of
  // Start() / RefreshNow().
  struct ShardState {
    explicit ShardState(std::unique_ptr<store::CapacityReader> r) : reader(std::move(r)) {}
    base::Mutex refresh_mu;
    const std::unique_ptr<store::CapacityReader> reader PT_GUARDED_BY(refresh_mu);
    // The reader's output, reused from one read to the next.
    store::CapacityRead read GUARDED_BY(refresh_mu);
    // The part built from the last successful read; null after an error.
    std::shared_ptr<const Snapshot> last_read GUARDED_BY(refresh_mu);
    // Set by every refresh of this shard, read by its thread between them.
    std::atomic<int64_t> period_ms{0};
  };

  // Reads shard `i` and, on success, publishes its part.
  // REQUIRES: shard i's refresh_mu is not held by this thread.
  store::Status RefreshShard(int i);
  // Reads the partition's counts and builds its part; or, if nothing was
  // committed since its last read, builds the part from that read as of now
  // and sets *unchanged. *cpu_micros: this thread's CPU time for it.
  store::Status ReadPart(ShardState* shard, std::shared_ptr<const Snapshot>* part,
                         bool* unchanged, int64_t* cpu_micros) REQUIRES(shard->refresh_mu);
  // Replaces part i and publishes the merge of all parts.
  void Publish(int i, std::shared_ptr<const Snapshot> part);
  // The period after a read that took `cpu_micros` of CPU: refresh_ms_, or
  // longer so that the read is at most max_cpu_share of it.
  int64_t PeriodAfter(int64_t cpu_micros) const;
  void Loop(int i);

  const int64_t refresh_ms_;
  const MirrorOptions options_;
  std::vector<std::unique_ptr<ShardState>> shards_;

  // Serializes publishers (shard threads and RefreshNow) so that parts_ and
  // the merge published from it agree. Held only for an in-memory merge,
  // never during a read; readers of Current() never take it.
  base::Mutex publish_mu_;
  std::vector<std::shared_ptr<const Snapshot>> parts_ GUARDED_BY(publish_mu_);
  // The version of the latest merge published (Snapshot::version).
  uint64_t published_ GUARDED_BY(publish_mu_) = 0;

  base::SharedSlot<const Snapshot> current_;
  // Offered every merged snapshot Publish() makes.
  CapacityHistory history_;

  // Wakes the refresh threads early, for Stop().
  base::Mutex wake_mu_;
  base::CondVar wake_cv_;
  bool stop_ GUARDED_BY(wake_mu_) = false;
  bool started_ = false;
  std::vector<std::thread> threads_;

  mutable base::Mutex error_mu_;
  std::string last_error_ GUARDED_BY(error_mu_);

  MirrorStats stats_;
};

}  // namespace kvmirror

#endif  // EDGEALLOC_KVMIRROR_MIRROR_H_
