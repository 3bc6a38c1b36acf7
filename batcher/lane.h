#ifndef EDGEALLOC_BATCHER_LANE_H_
#define EDGEALLOC_BATCHER_LANE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <thread>

#include "base/mutex.h"
#include "batcher/coalesce.h"
#include "batcher/heartbeat.h"
#include "concurrentqueue/blockingconcurrentqueue.h"
#include "store/types.h"

namespace batcher {

// One storage partition's share of the heartbeat path (batcher.h): the queue
// Submit fills and the lane's batching thread empties, its bound, the
// watermark the reaper judges silence from, and whether its writes fail.
// Reserve, MarkQueued, MarkWritten, Watermark and the failure marks are safe
// from any thread; the buffers and the thread are the batching thread's.
class Lane {
 public:
  explicit Lane(int partition) : partition_(partition) {}
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  int partition() const { return partition_; }

  // Takes n slots of the queue bounded at `capacity`, or none. Submit
  // reserves before it enqueues, so depth() never exceeds the bound.
  bool Reserve(int64_t n, int64_t capacity);
  // Gives back n slots: reserved and never queued, or taken into a batch.
  void Unreserve(int64_t n) { depth_.fetch_sub(n); }
  // Items reserved or queued and not yet taken into a batch.
  int64_t depth() const { return depth_.load(std::memory_order_relaxed); }

  // Stamps items[0..n) accepted now (never earlier than their own stamp)
  // and counts them queued, before they are enqueued; MarkWritten takes them
  // out once written (durable, or given up).
  void MarkQueued(Heartbeat* items, size_t n);
  void MarkWritten(const Heartbeat* items, size_t n);
  // Wall ms up to which every item this lane accepted has been written: now,
  // or just before the oldest acceptance still queued or being written. A
  // backlog or a batch still filling is not taken for silence.
  int64_t Watermark() const;
  // The oldest acceptance among the items of region `region_index`
  // (Heartbeat::region_index) or of a region not known (kUnknownRegion)
  // still queued or being written; 0 if none. A region's lag in this lane.
  int64_t OldestOf(int region_index) const;

  // A write of the lane's batch failed at steady `now_ms`, or one succeeded.
  void NoteWriteFailed(int64_t now_ms);
  void NoteWriteSucceeded();
  // True while the batch being written keeps failing (it is retried).
  bool failing() const { return failing_since_ms_.load(std::memory_order_relaxed) != 0; }
  // The lane's hold on the hearing (Hearing::AddHold): now while failing,
  // else the steady ms writes last failed or came back (0: never failed).
  int64_t HearingHoldMs() const;

  // Moodycamel's ConcurrentQueue with a semaphore, so the batching thread can
  // sleep until an item comes or its batch_wait runs out. Unbounded by
  // itself: Reserve is the bound.
  moodycamel::BlockingConcurrentQueue<Heartbeat> queue;
  // The batching thread's reused buffers, and the thread.
  Scratch scratch;
  store::HeartbeatWriteResult result;
  std::thread thread;

 private:
  const int partition_;
  std::atomic<int64_t> depth_{0};
  // How many items of each accepted_ms are queued or being written: the
  // oldest key is the lane's watermark.
  mutable base::Mutex queued_mu_;
  std::map<int64_t, int64_t> queued_by_accepted_ms_ GUARDED_BY(queued_mu_);
  // The same, by region_index (kUnknownRegion included).
  std::map<int, std::map<int64_t, int64_t>> queued_by_region_ GUARDED_BY(queued_mu_);
  // Steady ms since the batch being written first failed (0 while writes
  // succeed), and of the last failed attempt (or of the success after it).
  std::atomic<int64_t> failing_since_ms_{0};
  std::atomic<int64_t> last_failed_ms_{0};
};

}  // namespace batcher

#endif  // EDGEALLOC_BATCHER_LANE_H_
