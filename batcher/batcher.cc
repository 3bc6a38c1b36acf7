#include "batcher/batcher.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <future>
#include <iterator>
#include <map>
#include <new>
#include <string_view>
#include <utility>

#include "base/clock.h"
#include "batcher/sql.h"
#include "concurrentqueue/blockingconcurrentqueue.h"
#include "store/db.h"

namespace batcher {
namespace {

using Clock = std::chrono::steady_clock;

// One container's heartbeats of a batch, folded into one row.
struct Row {
  std::string id;
  int64_t accepted_ms = 0;
  std::optional<int64_t> ts_ms;
  std::optional<double> load;
  Heartbeat::State state = Heartbeat::State::kNone;
};

// What one attempt of a batch found; reset at each attempt.
struct Outcome {
  uint64_t written = 0;
  uint64_t stale = 0;
  std::vector<size_t> unknown;  // indexes into the rows
};

const char* StateName(Heartbeat::State state) {
  switch (state) {
    case Heartbeat::State::kReady:
      return "ready";
    case Heartbeat::State::kDraining:
      return "draining";
    case Heartbeat::State::kDead:
      return "dead";
    case Heartbeat::State::kNone:
      break;
  }
  return nullptr;
}

// A batch's rows and the index that folds them, kept by its lane from one
// batch to the next so that a batch allocates nothing once the lane is warm
// (ids longer than the small-string buffer aside). Touched only by the lane's
// batching thread.
struct Scratch {
  std::vector<Row> rows;
  std::unordered_map<std::string_view, size_t> index;  // keys view rows[i].id
};

// Folds items[0..n) into scratch->rows in queue order, so that writing the
// rows one after another ends exactly as writing the items one after another
// would (the batch's bounds then never change an outcome). An item joins its
// container's newest row only when neither carries a state and both carry a
// ts_ms or both do not: such reports differ only in liveness, load and
// ts_ms, which fold as the statements would apply them (an item older than
// the row's ts_ms changes nothing but liveness). A state report, or a change
// between reports with and without ts_ms, starts a new row, since its
// outcome depends on what the rows before it left (a `draining` after `dead`
// is not a `draining` alone; a report without ts_ms is current, one with an
// old ts_ms is not). last_heartbeat_ms is the newest accepted_ms of a row's
// items. Moves the ids out of the items. Returns the items folded away.
// REQUIRES: scratch->rows.capacity() >= n (the index views the rows' ids in place).
uint64_t Coalesce(Heartbeat* items, size_t n, Scratch* scratch) {
  std::vector<Row>& rows = scratch->rows;
  auto& index = scratch->index;  // id -> that container's newest row
  assert(rows.capacity() >= n);
  rows.clear();
  index.clear();
  uint64_t coalesced = 0;
  for (size_t i = 0; i < n; ++i) {
    Heartbeat& h = items[i];
    auto it = index.find(std::string_view(h.container_id));
    const bool joins = it != index.end() && h.state == Heartbeat::State::kNone &&
                       rows[it->second].state == Heartbeat::State::kNone &&
                       h.ts_ms.has_value() == rows[it->second].ts_ms.has_value();
    if (!joins) {
      rows.push_back(Row{std::move(h.container_id), h.accepted_ms, h.ts_ms, h.load, h.state});
      if (it == index.end()) {
        index.emplace(std::string_view(rows.back().id), rows.size() - 1);
      } else {
        it->second = rows.size() - 1;  // the key still views the first row's id
      }
      continue;
    }
    ++coalesced;
    Row& row = rows[it->second];
    row.accepted_ms = std::max(row.accepted_ms, h.accepted_ms);
    if (h.ts_ms && *h.ts_ms < *row.ts_ms) continue;  // older report: liveness only
    if (h.ts_ms) row.ts_ms = h.ts_ms;
    if (h.load) row.load = h.load;
  }
  return coalesced;
}

// A batch of rows as one job of the shard's Writer. A batch of at most
// kMaxRidingRows rows rides in the Writer's group commit beside the claims,
// under a SAVEPOINT of its own (needs_savepoint): its rows are one atomic
// unit that commits or fails whole, and it shares the group's one fsync
// instead of taking one of its own. Why that is DESIGN.md's "<= 100 rows a
// transaction" in spirit: the bound is there so heartbeats never hold the
// write lock long in one piece, and a riding batch adds its <= 100 rows'
// statements (about 0.5 ms) to one group, where a solo batch made every
// claim queued behind it wait for those rows and a whole extra fsync (the
// Writer is one thread either way). A larger batch (--batch-max above
// kMaxRidingRows) stays solo. The batching thread owns rows, outcome and
// promise and waits for Done, so the pointers outlive the job.
class BatchJob : public store::WriteJob {
 public:
  BatchJob(const std::vector<Row>* rows, Outcome* outcome, std::promise<store::Status>* done)
      : rows_(rows), outcome_(outcome), done_(done) {}

  store::Status Apply(store::Db* db) override {
    outcome_->written = 0;
    outcome_->stale = 0;
    outcome_->unknown.clear();
    store::Status s;
    store::StatementRef plain;
    RETURN_IF_ERROR(db->Cached(sql::kHeartbeatPlain, &plain));
    store::StatementRef report;
    RETURN_IF_ERROR(db->Cached(sql::kHeartbeatReport, &report));
    store::StatementRef stale;
    RETURN_IF_ERROR(db->Cached(sql::kHeartbeatStale, &stale));
    for (size_t i = 0; i < rows_->size(); ++i) {
      const Row& row = (*rows_)[i];
      const char* state = StateName(row.state);
      // The plain statement first; a state it did not find already held
      // goes through the report statement (sql.h).
      bool changed = false;
      for (store::Statement* stmt : {&*plain, &*report}) {
        stmt->Reset();
        stmt->Bind(1, row.id);
        stmt->Bind(2, row.accepted_ms);
        if (row.ts_ms) {
          stmt->Bind(3, *row.ts_ms);
        } else {
          stmt->BindNull(3);
        }
        if (row.load) {
          stmt->Bind(4, *row.load);
        } else {
          stmt->BindNull(4);
        }
        if (state != nullptr) {
          stmt->Bind(5, state);
        } else {
          stmt->BindNull(5);
        }
        s = stmt->Run();
        if (!s.ok()) return s;
        changed = db->Changes() > 0;
        if (changed || state == nullptr) break;
      }
      if (changed) {
        ++outcome_->written;
        continue;
      }
      // Older than the stored report, or not in this shard (sql.h).
      stale->Reset();
      stale->Bind(1, row.id);
      stale->Bind(2, row.accepted_ms);
      s = stale->Run();
      if (!s.ok()) return s;
      if (db->Changes() > 0) {
        ++outcome_->written;
        ++outcome_->stale;
      } else {
        outcome_->unknown.push_back(i);
      }
    }
    return store::Status::Ok();
  }

  void Done(store::Status status) override { done_->set_value(std::move(status)); }
  bool solo() const override { return rows_->size() > kMaxRidingRows; }

 private:
  const std::vector<Row>* rows_;
  Outcome* outcome_;
  std::promise<store::Status>* done_;
};

// Takes n slots of a queue bounded at `capacity`, or none.
bool Reserve(std::atomic<int64_t>* depth, int64_t n, int64_t capacity) {
  int64_t current = depth->load(std::memory_order_relaxed);
  do {
    if (current + n > capacity) return false;
  } while (!depth->compare_exchange_weak(current, current + n, std::memory_order_acq_rel));
  return true;
}

}  // namespace

// One shard's queue and its batching thread.
struct Batcher::Lane {
  explicit Lane(store::Shard* s) : shard(s) {}
  store::Shard* shard;
  // Moodycamel's ConcurrentQueue with a semaphore, so the batching thread can
  // sleep until an item comes or its batch_wait runs out. Unbounded by
  // itself: `depth` is the bound.
  moodycamel::BlockingConcurrentQueue<Heartbeat> queue;
  // Items reserved or queued and not yet taken into a batch. Submit reserves
  // before it enqueues, so depth never exceeds queue_capacity.
  std::atomic<int64_t> depth{0};
  // How many items of each accepted_ms are queued or being written: the
  // oldest key is the lane's watermark (everything accepted before it is
  // stored), which the reaper judges silence from, so that neither a backlog
  // nor a batch still filling is taken for death.
  base::Mutex queued_mu;
  std::map<int64_t, int64_t> queued_by_accepted_ms GUARDED_BY(queued_mu);
  // The batching thread's reused buffers.
  Scratch scratch;
  Outcome outcome;
  std::thread thread;
};

Batcher::Batcher(std::vector<store::Shard*> shards, store::ShardMap map, BatcherOptions options)
    : map_(std::move(map)), options_(options) {
  assert(!shards.empty());
  assert(static_cast<int>(shards.size()) == map_.shards());
  options_.batch_max = std::clamp(options_.batch_max, 1, kMaxBatchRows);
  options_.batch_wait_ms = std::max(options_.batch_wait_ms, 0);
  options_.queue_capacity = std::max<int64_t>(options_.queue_capacity, 1);
  options_.dead_after_ms = std::max<int64_t>(options_.dead_after_ms, 1);
  if (options_.reaper_interval_ms <= 0) {
    options_.reaper_interval_ms =
        static_cast<int>(std::clamp<int64_t>(options_.dead_after_ms / 4, 1, 1000));
  }
  for (store::Shard* shard : shards) lanes_.push_back(std::make_unique<Lane>(shard));
}

Batcher::~Batcher() { Stop(); }

void Batcher::Start() {
  base::MutexLock lock(&stop_mu_);
  if (started_.exchange(true)) return;
  for (auto& lane : lanes_) {
    Lane* l = lane.get();
    l->thread = std::thread([this, l] { LaneLoop(l); });
  }
  reaper_ = std::thread([this] { ReaperLoop(); });
}

void Batcher::Stop() {
  if (!started_.load()) Start();
  base::MutexLock lock(&stop_mu_);
  if (stopped_.exchange(true)) return;
  accepting_ = false;
  // A Submit that saw accepting_ before it flipped finishes its enqueue
  // before the lanes are told to drain, so no accepted item is stranded.
  while (submitting_.load() != 0) std::this_thread::yield();
  {
    base::MutexLock reaper_lock(&reaper_mu_);
    reaper_stop_ = true;
  }
  reaper_cv_.SignalAll();
  if (reaper_.joinable()) reaper_.join();
  draining_ = true;
  for (auto& lane : lanes_) {
    if (lane->thread.joinable()) lane->thread.join();
  }
}

SubmitResult Batcher::Submit(std::vector<Heartbeat>&& items) {
  SubmitResult result;
  result.items = static_cast<int64_t>(items.size());
  submitting_.fetch_add(1);
  struct Leave {
    std::atomic<int>* n;
    ~Leave() { n->fetch_sub(1); }
  } leave{&submitting_};
  if (!accepting_.load()) {
    result.code = SubmitResult::Code::kStopping;
    stats_.refused_stopping.fetch_add(items.size(), std::memory_order_relaxed);
    return result;
  }
  if (items.empty()) return result;

  std::vector<std::vector<Heartbeat>> per_shard(lanes_.size());
  if (lanes_.size() == 1) {
    per_shard[0] = std::move(items);
  } else {
    for (Heartbeat& h : items) {
      int shard = -1;
      store::Status s = ShardOfId(h.container_id, &shard);
      if (!s.ok()) {
        // Storage trouble, not an unknown id: refuse before accepting, so
        // that no heartbeat answered 202 is dropped.
        result.code = SubmitResult::Code::kUnavailable;
        result.unknown = 0;
        stats_.refused.fetch_add(static_cast<uint64_t>(result.items), std::memory_order_relaxed);
        return result;
      }
      if (shard < 0) {
        ++result.unknown;
      } else {
        per_shard[static_cast<size_t>(shard)].push_back(std::move(h));
      }
    }
  }

  // All or nothing: a slot in every shard the request touches, or none.
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const auto n = static_cast<int64_t>(per_shard[i].size());
    if (n == 0 || Reserve(&lanes_[i]->depth, n, options_.queue_capacity)) continue;
    for (size_t j = 0; j < i; ++j) {
      lanes_[j]->depth.fetch_sub(static_cast<int64_t>(per_shard[j].size()));
    }
    result.code = SubmitResult::Code::kOverloaded;
    result.unknown = 0;
    stats_.refused.fetch_add(static_cast<uint64_t>(result.items), std::memory_order_relaxed);
    return result;
  }
  for (size_t i = 0; i < lanes_.size(); ++i) {
    std::vector<Heartbeat>& share = per_shard[i];
    if (share.empty()) continue;
    MarkQueued(lanes_[i].get(), share.data(), share.size());
    // The slots are reserved, so room is not the question: enqueue_bulk
    // fails only when malloc does, which is what bad_alloc says everywhere
    // else (the vectors above would throw it too).
    if (!lanes_[i]->queue.enqueue_bulk(std::make_move_iterator(share.begin()), share.size())) {
      throw std::bad_alloc();
    }
  }
  stats_.accepted.fetch_add(static_cast<uint64_t>(result.items), std::memory_order_relaxed);
  if (result.unknown > 0) {
    stats_.unknown.fetch_add(static_cast<uint64_t>(result.unknown), std::memory_order_relaxed);
  }
  return result;
}

int64_t Batcher::QueueDepth(int shard) const {
  return lanes_[static_cast<size_t>(shard)]->depth.load(std::memory_order_relaxed);
}

int64_t Batcher::QueueDepth() const {
  int64_t total = 0;
  for (const auto& lane : lanes_) total += lane->depth.load(std::memory_order_relaxed);
  return total;
}

store::Status Batcher::ShardOfId(const std::string& id, int* shard) {
  *shard = -1;
  {
    base::ReaderLock lock(&cache_mu_);
    auto it = shard_of_id_.find(id);
    if (it != shard_of_id_.end()) {
      *shard = it->second;
      return store::Status::Ok();
    }
  }
  // Unknown ids are not cached: a container registered a moment later must
  // be found by its next heartbeat.
  for (size_t i = 0; i < lanes_.size(); ++i) {
    bool found = false;
    store::Status s = lanes_[i]->shard->reads->With([&](store::Db* db) {
      store::Status st;
      store::StatementRef q;
      RETURN_IF_ERROR(db->Cached(sql::kContainerExists, &q));
      q->Bind(1, id);
      return q->Step(&found);
    });
    if (!s.ok()) return s;
    if (!found) continue;
    base::WriterLock lock(&cache_mu_);
    if (shard_of_id_.size() >= kMaxCachedIds) shard_of_id_.clear();
    shard_of_id_.emplace(id, static_cast<int>(i));
    *shard = static_cast<int>(i);
    return store::Status::Ok();
  }
  return store::Status::Ok();
}

namespace {

// Where the run of items with items[i]'s accepted_ms ends: a request's items
// share one, so a batch has few runs and the lane's map is touched a few
// times, not once an item.
size_t AcceptedRunEnd(const Heartbeat* items, size_t n, size_t i) {
  size_t j = i + 1;
  while (j < n && items[j].accepted_ms == items[i].accepted_ms) ++j;
  return j;
}

}  // namespace

void Batcher::MarkQueued(Lane* lane, Heartbeat* items, size_t n) {
  base::MutexLock lock(&lane->queued_mu);
  // Taken under the lock the reaper reads the watermark under: an item is
  // either in the set when the reaper looks, or stamped after it looked.
  const int64_t now = base::NowMs();
  for (size_t i = 0; i < n; ++i) items[i].accepted_ms = std::max(items[i].accepted_ms, now);
  for (size_t i = 0, end; i < n; i = end) {
    end = AcceptedRunEnd(items, n, i);
    lane->queued_by_accepted_ms[items[i].accepted_ms] += static_cast<int64_t>(end - i);
  }
}

void Batcher::MarkWritten(Lane* lane, const Heartbeat* items, size_t n) {
  base::MutexLock lock(&lane->queued_mu);
  for (size_t i = 0, end; i < n; i = end) {
    end = AcceptedRunEnd(items, n, i);
    auto it = lane->queued_by_accepted_ms.find(items[i].accepted_ms);
    if (it == lane->queued_by_accepted_ms.end()) continue;
    it->second -= static_cast<int64_t>(end - i);
    if (it->second <= 0) lane->queued_by_accepted_ms.erase(it);
  }
}

void Batcher::Forget(const std::string& id) {
  base::WriterLock lock(&cache_mu_);
  shard_of_id_.erase(id);
}

void Batcher::LaneLoop(Lane* lane) {
  const auto max = static_cast<size_t>(options_.batch_max);
  std::vector<Heartbeat> buf(max);
  lane->scratch.rows.reserve(max);
  lane->scratch.index.reserve(max);
  for (;;) {
    // Read before the dequeue: once draining_ is set no Submit can enqueue,
    // so an empty dequeue after it means the queue is empty for good.
    const bool draining = draining_.load();
    size_t n = lane->queue.wait_dequeue_bulk_timed(buf.data(), max, kPollMs * 1000);
    if (n == 0) {
      if (draining) return;
      continue;
    }
    // The time bound runs from the first item's acceptance: an item that
    // already waited behind a slow write is not made to wait again.
    const int64_t waited = base::NowMs() - buf[0].accepted_ms;
    const int64_t left_ms =
        std::clamp<int64_t>(options_.batch_wait_ms - waited, 0, options_.batch_wait_ms);
    const auto deadline = Clock::now() + std::chrono::milliseconds(left_ms);
    while (n < max) {
      const auto now = Clock::now();
      if (draining_.load() || now >= deadline) {
        n += lane->queue.try_dequeue_bulk(buf.data() + n, max - n);
        break;
      }
      const auto slice =
          std::min<Clock::duration>(deadline - now, std::chrono::milliseconds(kPollMs));
      const auto usecs = std::chrono::duration_cast<std::chrono::microseconds>(slice).count();
      n +=
          lane->queue.wait_dequeue_bulk_timed(buf.data() + n, max - n, std::max<int64_t>(usecs, 1));
    }
    lane->depth.fetch_sub(static_cast<int64_t>(n));
    WriteBatch(lane, buf.data(), n);
  }
}

void Batcher::WriteBatch(Lane* lane, Heartbeat* items, size_t n) {
  const uint64_t coalesced = Coalesce(items, n, &lane->scratch);
  const std::vector<Row>& rows = lane->scratch.rows;
  Outcome& outcome = lane->outcome;
  int backoff_ms = kRetryInitialMs;
  std::optional<Clock::time_point> failing_since;
  for (;;) {
    std::promise<store::Status> done;
    std::future<store::Status> result = done.get_future();
    const auto t0 = Clock::now();
    // At most one batch in flight per shard: the queue stays the only buffer,
    // and its bound the only bound.
    store::Status s =
        lane->shard->writer->Submit(std::make_unique<BatchJob>(&rows, &outcome, &done))
            ? result.get()
            : store::Status::Busy("writer of " + lane->shard->path + " is full or stopping");
    if (s.ok()) {
      stats_.write_latency_us.Observe(
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count());
      stats_.batch_size.Observe(static_cast<int64_t>(rows.size()));
      stats_.batches.fetch_add(1, std::memory_order_relaxed);
      stats_.written.fetch_add(outcome.written, std::memory_order_relaxed);
      stats_.stale.fetch_add(outcome.stale, std::memory_order_relaxed);
      stats_.coalesced.fetch_add(coalesced, std::memory_order_relaxed);
      stats_.unknown.fetch_add(outcome.unknown.size(), std::memory_order_relaxed);
      if (lanes_.size() > 1) {
        for (size_t i : outcome.unknown) Forget(rows[i].id);  // removed since it was cached
      }
      break;
    }
    stats_.write_retries.fetch_add(1, std::memory_order_relaxed);
    const auto now = Clock::now();
    if (!failing_since) failing_since = now;
    if (draining_.load() && now - *failing_since > std::chrono::milliseconds(kStopGiveUpMs)) {
      stats_.lost.fetch_add(n, std::memory_order_relaxed);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min(backoff_ms * 2, kRetryMaxMs);
  }
  // Durable (or, stopping against a failing store, given up and counted):
  // these items no longer hold the lane's watermark back.
  MarkWritten(lane, items, n);
  // Release the strings now (the ids moved into the rows; the rest is small).
  for (size_t i = 0; i < n; ++i) items[i] = Heartbeat();
  lane->scratch.index.clear();
  lane->scratch.rows.clear();
}

void Batcher::ReaperLoop() {
  const auto interval = std::chrono::milliseconds(options_.reaper_interval_ms);
  for (;;) {
    {
      base::MutexLock lock(&reaper_mu_);
      const auto until = std::chrono::steady_clock::now() + interval;
      while (!reaper_stop_ && std::chrono::steady_clock::now() < until) {
        reaper_cv_.WaitFor(&reaper_mu_, until - std::chrono::steady_clock::now());
      }
      if (reaper_stop_) return;
    }
    for (auto& lane : lanes_) ReapShard(lane.get());
  }
}

int64_t Batcher::SilenceCutoff(Lane* lane) const {
  base::MutexLock lock(&lane->queued_mu);
  int64_t watermark = base::NowMs();
  if (!lane->queued_by_accepted_ms.empty()) {
    // Items accepted at this ms are not all stored yet; those before it are.
    watermark = std::min(watermark, lane->queued_by_accepted_ms.begin()->first - 1);
  }
  return watermark - options_.dead_after_ms;
}

void Batcher::ReapShard(Lane* lane) {
  bool any = false;
  store::Status s = lane->shard->reads->With([&](store::Db* db) {
    store::Status st;
    {
      store::StatementRef q;
      RETURN_IF_ERROR(db->Cached(sql::kAnySilent, &q));
      q->Bind(1, SilenceCutoff(lane));
      st = q->Step(&any);
      if (!st.ok() || any) return st;
    }
    store::StatementRef q;
    RETURN_IF_ERROR(db->Cached(sql::kAnyDeadReported, &q));
    return q->Step(&any);
  });
  if (!s.ok() || !any) return;  // a failed read: the next tick looks again

  // Bounded transactions, one after another, until a sweep finds less than
  // a full one. The cutoff is taken again at write time.
  for (;;) {
    int64_t ended = 0;
    int64_t marked = 0;
    s = lane->shard->writer->RunSync(
        [&](store::Db* db) {
          ended = 0;
          marked = 0;
          const int64_t cutoff = SilenceCutoff(lane);
          store::Status st;
          {
            store::StatementRef q;
            RETURN_IF_ERROR(db->Cached(sql::kReapPicked, &q));
            q->Bind(1, cutoff);
            q->Bind(2, kReapBatchRows);
            st = q->Run();
            if (!st.ok()) return st;
            ended = db->Changes();
          }
          if (ended >= kReapBatchRows) return st;
          store::StatementRef q;
          RETURN_IF_ERROR(db->Cached(sql::kReapUnpicked, &q));
          q->Bind(1, cutoff);
          q->Bind(2, kReapBatchRows - ended);
          st = q->Run();
          if (st.ok()) marked = db->Changes();
          return st;
        },
        /*solo=*/true);
    if (!s.ok()) return;  // Busy or an error: nothing written; the next tick retries
    stats_.sessions_ended.fetch_add(static_cast<uint64_t>(ended), std::memory_order_relaxed);
    stats_.dead_marked.fetch_add(static_cast<uint64_t>(ended + marked), std::memory_order_relaxed);
    if (ended + marked < kReapBatchRows) return;
    base::MutexLock lock(&reaper_mu_);
    if (reaper_stop_) return;
  }
}

}  // namespace batcher
