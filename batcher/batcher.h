#ifndef EDGEALLOC_BATCHER_BATCHER_H_
#define EDGEALLOC_BATCHER_BATCHER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/stop_signal.h"
#include "batcher/coalesce.h"
#include "batcher/deaths.h"
#include "batcher/heard_publisher.h"
#include "batcher/hearing.h"
#include "batcher/heartbeat.h"
#include "batcher/mass_silence.h"
#include "batcher/region_cache.h"
#include "batcher/stats.h"
#include "batcher/unknown_ids.h"
#include "store/storage.h"

namespace batcher {

class Lane;

// Bounds of the heartbeat path (every queue and batch bound is named).
// Rows a batch at most, whatever BatcherOptions::batch_max says.
inline constexpr int kMaxBatchRows = 1000;
// Rows the reaper changes in one transaction, so a sweep of a large dead
// region never holds the write lock for long.
inline constexpr int kReapBatchRows = 256;
// Backoff between attempts of a batch the Writer refused or failed.
inline constexpr int kRetryInitialMs = 1;
inline constexpr int kRetryMaxMs = 1000;
// How long Stop() goes on writing what was accepted against a failing store:
// the whole drain, every lane and batch together, not each batch (a batch
// each 10 s behind a dead database was hours). What is left then is given up
// (counted in BatcherStats::lost, which the server logs). While running, a
// batch is retried for as long as it takes.
inline constexpr int kStopGiveUpMs = 10000;
// Longest a batching thread sleeps before it looks at the stop flag.
inline constexpr int kPollMs = 20;

struct BatcherOptions {
  // Rows a transaction at most (--batch-max); clamped to [1, kMaxBatchRows].
  int batch_max = 100;
  // Longest a heartbeat waits for others to share its transaction, counted
  // from its accepted_ms (--batch-wait-ms); clamped to >= 0.
  int batch_wait_ms = 10;
  // Heartbeats queued per partition before a request is refused (--queue-capacity).
  int64_t queue_capacity = 100000;
  // A container without heartbeat this long is dead (--dead-after-ms).
  int64_t dead_after_ms = store::kDefaultDeadAfterMs;
  // How often the reaper looks; <= 0 derives min(1000, max(1, dead_after_ms / 4)).
  int reaper_interval_ms = 0;
  // A beat of the hearing's watch (or an io loop's) later than this is a
  // span of deafness (--deaf-gap-ms); <= 0 derives min(1000, max(10,
  // dead_after_ms / 3)). See Hearing.
  int64_t deaf_gap_ms = 0;
  // Called with each span of deafness the hearing noticed (the server logs
  // it), on the thread that noticed it.
  std::function<void(const Hearing::Span&)> on_deaf;
  // Mass silence (MassSilence): more than this fraction of a pool's live
  // containers, or of the fleet's, silent at once (--mass-silence-fraction)
  // holds their sessions for mass_silence_grace_ms of silence
  // (--mass-silence-grace-ms) instead of dead_after_ms.
  double mass_silence_fraction = 0.5;
  int64_t mass_silence_grace_ms = 300000;
  // The live (not dead) containers by pool, as the server's capacity mirror
  // last saw them. Unset: no mass silence is looked for.
  std::function<LiveByPool()> live_by_pool;
  // Called with MassSilence's lines (the server logs them).
  std::function<void(const std::string&)> on_mass_silence;
  // Called on the reaper's thread with DescribeDeaths' line for each sweep
  // that marked any container dead (the server logs it); none if empty.
  std::function<void(const std::string&)> on_deaths;
};

// What Submit did with a request. Expected outcomes, not errors: the server
// maps them to 202, 503 overloaded and 503 while draining.
struct SubmitResult {
  enum class Code {
    kAccepted,    // taken whole: 202 {"accepted": items}
    kOverloaded,  // a queue lacked room; nothing taken: 503 overloaded
    kStopping,    // Stop() has begun; nothing taken: 503
    kUnavailable, // looking up a container's partition failed; nothing taken: 503
  };
  Code code = Code::kAccepted;
  // Items of the request (all of them when accepted, including unknown ones).
  int64_t items = 0;
  // Of an accepted request, items dropped at once because no partition
  // holds their container (when the storage can tell at once; otherwise an
  // unknown id is found, counted and dropped at write time).
  int64_t unknown = 0;
  // Of an accepted request, the ids known to have no container, in request
  // order, each once: those counted in `unknown`, and those whose latest
  // heartbeat write found no container (RecentlyUnknown). The reply comes
  // before the write, so an id found unknown only there is named from the
  // request after that write on, until a later write of it finds it.
  std::vector<std::string> unknown_ids;

  bool accepted() const { return code == Code::kAccepted; }
};

// A Batcher takes validated heartbeats from the HTTP handlers, queues them per
// storage partition and writes them in short, coalesced batches
// (Storage::WriteHeartbeats); its reaper marks silent containers dead
// (Storage::SweepSilentContainers). Submit and every reader are safe from
// any thread; each partition has one batching thread that alone writes its
// queue out (its queue, bound and watermark are a Lane, lane.h), and one
// reaper thread serves all partitions. The storage must
// outlive the Batcher, its writers running until Stop() has returned.
class Batcher {
 public:
  // REQUIRES: the storage's writers started.
  Batcher(store::Storage* storage, BatcherOptions options = {});
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;
  // Stop()s if still running.
  ~Batcher();

  // Starts the batching threads and the reaper. Submit works before Start
  // (items wait in the queues). Call at most once.
  void Start();

  // Refuses new requests (kStopping), waits for every Submit in flight,
  // stops the reaper, then writes every queued heartbeat and joins the
  // threads: once it returns, everything accepted is in the database (or,
  // if the store kept failing for kStopGiveUpMs, counted in stats().lost).
  // The caller stops the storage's writers afterwards, never before. Starts
  // the threads first if Start() was never called. Idempotent.
  void Stop();

  // Queues a request, all or nothing. kAccepted: every item is queued (or
  // counted unknown and dropped) and will be written within about
  // batch_wait_ms. kOverloaded: some partition's queue lacked room for its
  // share; nothing of the request was queued. kStopping: Stop() has begun;
  // nothing was queued. Each item's partition is asked of the storage on
  // the calling thread (Storage::PartitionOf). A request with more items for
  // one partition than queue_capacity is always kOverloaded (the server's
  // body limit keeps requests far below the default).
  // Each item's accepted_ms is set to the time Submit takes it (never
  // earlier than the caller's stamp), so the reaper's watermark is exact.
  SubmitResult Submit(std::vector<Heartbeat>&& items);

  // Heartbeats queued in partition i, or in all, not yet taken into a batch.
  int64_t QueueDepth(int partition) const;
  int64_t QueueDepth() const;
  // How long the oldest heartbeat of partition i accepted and not yet stored
  // (queued, in the batch being written, or held back by the storage for a
  // row lock: Storage::OldestHeldBackMs) has waited, in ms; 0 if none. The
  // reaper judges that lane's silence only up to that acceptance, and so do
  // the other nodes' (HeardPublisher).
  int64_t LagMs(int partition) const;
  // A region's heartbeat lag: how long the oldest heartbeat of the region's
  // containers accepted and not yet stored has waited, in ms; 0 if none.
  // Each heartbeat counts for its container's region as the node's writes
  // found it (RegionCache); one whose container's region the node has not
  // learned yet, and a row the storage held back for a lock
  // (OldestHeldBackMs), counts for every region whose heartbeats its
  // partition carries (Storage::PartitionsOfRegion): a region's lag is never
  // less than its own heartbeats' wait. So regions lag apart on either
  // engine, whether their heartbeats share a lane (PostgreSQL spreads a
  // node's containers over its writers by id) or not (SQLite shards). Only
  // this node's heartbeats count (each node has its own queues).
  int64_t RegionLagMs(const std::string& region) const;
  int partitions() const { return static_cast<int>(lanes_.size()); }
  const BatcherOptions& options() const { return options_; }
  const BatcherStats& stats() const { return stats_; }
  // The reaper's deaths of the last minutes, by pool (the dashboard's).
  const RecentDeaths& recent_deaths() const { return recent_deaths_; }
  // Whether, and since when, this server has heard its containers without a
  // break: the reaper judges no container silent before dead_after_ms of it.
  // The server adds its io loops as sources.
  Hearing& hearing() { return *hearing_; }
  const Hearing& hearing() const { return *hearing_; }
  const MassSilence& mass_silence() const { return *mass_silence_; }
  // The ids whose latest write found no container (named in SubmitResult).
  const RecentlyUnknown& recently_unknown() const { return recently_unknown_; }
  // True while some lane's heartbeat writes fail (its batch is being
  // retried): the node takes heartbeats it cannot write (/readyz says so).
  bool AnyLaneFailing() const;

 private:
  void LaneLoop(Lane* lane);
  // Writes one batch of the lane's partition, retrying until it is durable
  // (or, while stopping, until kStopGiveUpMs of failures).
  void WriteBatch(Lane* lane, Heartbeat* items, size_t n);
  void ReaperLoop();
  // The reaper's cutoff for a lane: a container whose stored heartbeat is
  // older is silent. Every heartbeat accepted up to the lane's watermark is
  // stored, so the cutoff is dead_after_ms of hearing before min(now,
  // watermark): a heartbeat still queued is liveness from the moment it was
  // accepted. And deafness is not death: until the server has heard for
  // dead_after_ms without a break, nothing is silent (kNothingSilent); after,
  // the time it could not hear is passed over (BackByHearing).
  int64_t SilenceCutoff(Lane* lane) const;
  // The wall instant hearing_ms of this server's hearing before wall_ms
  // (<= now): wall_ms - hearing_ms, earlier by the spans of deafness in
  // between (Hearing::StartOfHearing). A container that reported just before
  // a pause of the server, and whose next reports were refused or never
  // read during it, is not silent for the pause: neither for dead_after_ms
  // nor for a mass silence's grace.
  int64_t BackByHearing(int64_t wall_ms, int64_t hearing_ms) const;
  // The lane's watermark: every heartbeat it accepted before it is stored
  // (queued ones, the batch being written, and those the storage held back
  // for a lock are not), on this node's clock.
  int64_t HeardUntil(Lane* lane) const;
  // The hearing's holds: each lane's failing writes, the store's writers
  // that cannot reach their database, requests refused for want of room.
  void AddHearingHolds();
  // One lane's sweeps; with !judge_silence only of the containers that
  // reported themselves dead.
  void ReapPartition(Lane* lane, const store::HeldPools& held, bool judge_silence);
  // The pools in a mass silence now, and their longer grace's cutoff; none
  // without options_.live_by_pool. Nullopt when they are not known now (with
  // live_by_pool, nothing can be silent yet or the count failed): the tick
  // then judges no silence, since its sweep could find the silence the count
  // did not (hearing that reaches dead_after_ms in between, a count refused
  // for a database clock step) and end held sessions without their grace.
  std::optional<store::HeldPools> HeldPoolsNow();
  // Counts a sweep's deaths by reason, keeps them for recent_deaths() and
  // hands their line to options_.on_deaths.
  void NoteDeaths(const std::vector<store::DeadContainer>& dead);

  store::Storage* const storage_;
  BatcherOptions options_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  BatcherStats stats_;
  RecentDeaths recent_deaths_;
  RecentlyUnknown recently_unknown_;
  RegionCache regions_;
  std::unique_ptr<Hearing> hearing_;
  std::unique_ptr<MassSilence> mass_silence_;
  std::unique_ptr<HeardPublisher> heard_publisher_;
  std::vector<PoolKey> held_pools_;  // the reaper's thread only
  // Steady ms of the last heartbeat request refused for want of room or of
  // the store (kOverloaded, kUnavailable), and of the last moment a store
  // writer was seen failing: holds of the hearing.
  std::atomic<int64_t> last_refused_ms_{0};
  std::atomic<int64_t> store_failing_seen_ms_{0};

  std::atomic<bool> accepting_{true};
  std::atomic<int> submitting_{0};
  // Set once no Submit can enqueue any more: a batching thread that then
  // finds its queue empty is done.
  std::atomic<bool> draining_{false};
  // When Stop's kStopGiveUpMs run out, on the steady clock (ns since its
  // epoch); set before draining_.
  std::atomic<int64_t> give_up_at_ns_{0};
  std::atomic<bool> started_{false};
  std::atomic<bool> stopped_{false};
  base::Mutex stop_mu_;  // serializes Start and Stop

  base::StopSignal reaper_stop_;
  std::thread reaper_;
};

}  // namespace batcher

#endif  // EDGEALLOC_BATCHER_BATCHER_H_
