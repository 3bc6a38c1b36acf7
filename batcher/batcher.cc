#include "batcher/batcher.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <iterator>
#include <new>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "base/clock.h"
#include "batcher/lane.h"

namespace batcher {
namespace {

using Clock = std::chrono::steady_clock;

// Keeps the first of each id of *ids, in order.
void KeepFirstOfEach(std::vector<std::string>* ids) {
  std::unordered_set<std::string> seen;
  std::erase_if(*ids, [&seen](const std::string& id) { return !seen.insert(id).second; });
}

}  // namespace

Batcher::Batcher(store::Storage* storage, BatcherOptions options)
    : storage_(storage), options_(options) {
  options_.batch_max = std::clamp(options_.batch_max, 1, kMaxBatchRows);
  options_.batch_wait_ms = std::max(options_.batch_wait_ms, 0);
  options_.queue_capacity = std::max<int64_t>(options_.queue_capacity, 1);
  options_.dead_after_ms = std::max<int64_t>(options_.dead_after_ms, 1);
  if (options_.reaper_interval_ms <= 0) {
    options_.reaper_interval_ms =
        static_cast<int>(std::clamp<int64_t>(options_.dead_after_ms / 4, 1, 1000));
  }
  if (options_.deaf_gap_ms <= 0) {
    options_.deaf_gap_ms = std::clamp<int64_t>(options_.dead_after_ms / 3, 10, 1000);
  }
  for (int p = 0; p < storage_->partitions(); ++p) lanes_.push_back(std::make_unique<Lane>(p));
  hearing_ = std::make_unique<Hearing>(options_.deaf_gap_ms, options_.on_deaf);
  options_.mass_silence_grace_ms =
      std::max(options_.mass_silence_grace_ms, options_.dead_after_ms);
  mass_silence_ = std::make_unique<MassSilence>(
      options_.mass_silence_fraction, options_.mass_silence_grace_ms, options_.on_mass_silence);
  AddHearingHolds();
  heard_publisher_ = std::make_unique<HeardPublisher>(
      storage_, options_.dead_after_ms, options_.reaper_interval_ms, [this] {
        // Told as if this node had heard without a break: the other nodes
        // judge silence dead_after_ms before it, and so pass over the time
        // this node could not hear, as its own sweeps do.
        std::vector<int64_t> heard;
        for (auto& lane : lanes_) {
          heard.push_back(BackByHearing(HeardUntil(lane.get()), options_.dead_after_ms) +
                          options_.dead_after_ms);
        }
        return heard;
      });
}

void Batcher::AddHearingHolds() {
  for (auto& lane : lanes_) {
    Lane* l = lane.get();
    hearing_->AddHold(Hearing::Cause::kWriteFailing,
                      "heartbeat writes of partition " + std::to_string(l->partition()),
                      [l] { return l->HearingHoldMs(); });
  }
  // A writer that cannot reach its database (PostgreSQL) also makes the
  // heartbeat route refuse: remembered here, since the flag itself clears.
  hearing_->AddHold(Hearing::Cause::kWriteFailing, "the store's writers", [this] {
    for (int p = 0; p < storage_->partitions(); ++p) {
      if (storage_->writer_stats(p).failing.load(std::memory_order_relaxed) != 0) {
        store_failing_seen_ms_.store(base::SteadyNowMs());
        break;
      }
    }
    return store_failing_seen_ms_.load();
  });
  hearing_->AddHold(Hearing::Cause::kRefused, "heartbeats refused (queue full or store unreadable)",
                    [this] { return last_refused_ms_.load(); });
}

bool Batcher::AnyLaneFailing() const {
  for (const auto& lane : lanes_) {
    if (lane->failing()) return true;
  }
  return false;
}

Batcher::~Batcher() { Stop(); }

void Batcher::Start() {
  base::MutexLock lock(&stop_mu_);
  if (started_.exchange(true)) return;
  for (auto& lane : lanes_) {
    Lane* l = lane.get();
    l->thread = std::thread([this, l] { LaneLoop(l); });
  }
  hearing_->Start();
  heard_publisher_->Start();
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
  reaper_stop_.Stop();
  if (reaper_.joinable()) reaper_.join();
  hearing_->Stop();
  give_up_at_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       (Clock::now() + std::chrono::milliseconds(kStopGiveUpMs)).time_since_epoch())
                       .count();
  draining_ = true;
  for (auto& lane : lanes_) {
    if (lane->thread.joinable()) lane->thread.join();
  }
  // Only now: the other nodes wait for what the drain wrote.
  heard_publisher_->Stop();
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
  // Nothing of a refused request is taken, so nothing of it is named.
  const auto refuse = [&](SubmitResult::Code code) {
    result.code = code;
    result.unknown = 0;
    result.unknown_ids.clear();
    last_refused_ms_.store(base::SteadyNowMs());
    stats_.refused.fetch_add(static_cast<uint64_t>(result.items), std::memory_order_relaxed);
    return result;
  };

  std::vector<std::vector<Heartbeat>> per_partition(lanes_.size());
  if (lanes_.size() == 1) {
    recently_unknown_.AppendNamed(items, &result.unknown_ids);
    per_partition[0] = std::move(items);
  } else {
    for (Heartbeat& h : items) {
      int partition = -1;
      store::Status s = storage_->PartitionOf(h.container_id, &partition);
      if (!s.ok()) {
        // Storage trouble, not an unknown id: refuse before accepting, so
        // that no heartbeat answered 202 is dropped.
        return refuse(SubmitResult::Code::kUnavailable);
      }
      if (partition < 0 || recently_unknown_.Contains(h.container_id)) {
        result.unknown_ids.push_back(h.container_id);
      }
      if (partition < 0) {
        ++result.unknown;
      } else {
        per_partition[static_cast<size_t>(partition)].push_back(std::move(h));
      }
    }
    KeepFirstOfEach(&result.unknown_ids);
  }

  // All or nothing: a slot in every partition the request touches, or none.
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const auto n = static_cast<int64_t>(per_partition[i].size());
    if (n == 0 || lanes_[i]->Reserve(n, options_.queue_capacity)) continue;
    for (size_t j = 0; j < i; ++j) {
      lanes_[j]->Unreserve(static_cast<int64_t>(per_partition[j].size()));
    }
    return refuse(SubmitResult::Code::kOverloaded);
  }
  for (size_t i = 0; i < lanes_.size(); ++i) {
    std::vector<Heartbeat>& share = per_partition[i];
    if (share.empty()) continue;
    regions_.Stamp(share.data(), share.size());
    lanes_[i]->MarkQueued(share.data(), share.size());
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

int64_t Batcher::QueueDepth(int partition) const {
  return lanes_[static_cast<size_t>(partition)]->depth();
}

int64_t Batcher::QueueDepth() const {
  int64_t total = 0;
  for (const auto& lane : lanes_) total += lane->depth();
  return total;
}

int64_t Batcher::LagMs(int partition) const {
  const int64_t heard_until = HeardUntil(lanes_[static_cast<size_t>(partition)].get());
  return std::max<int64_t>(0, base::NowMs() - 1 - heard_until);
}

int64_t Batcher::RegionLagMs(const std::string& region) const {
  const int index = regions_.IndexOf(region);
  int64_t oldest = 0;  // the oldest acceptance not yet stored; 0: none
  const auto older = [&oldest](int64_t ms) {
    if (ms != 0 && (oldest == 0 || ms < oldest)) oldest = ms;
  };
  for (int p : storage_->PartitionsOfRegion(region)) {
    if (p < 0 || p >= partitions()) continue;
    older(lanes_[static_cast<size_t>(p)]->OldestOf(index));
    older(storage_->OldestHeldBackMs(p));  // after the lane, as HeardUntil asks
  }
  return oldest == 0 ? 0 : std::max<int64_t>(0, base::NowMs() - oldest);
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
    lane->Unreserve(static_cast<int64_t>(n));
    WriteBatch(lane, buf.data(), n);
  }
}

void Batcher::WriteBatch(Lane* lane, Heartbeat* items, size_t n) {
  const uint64_t coalesced = Coalesce(items, n, &lane->scratch);
  const std::vector<store::HeartbeatRow>& rows = lane->scratch.rows;
  store::HeartbeatWriteResult& result = lane->result;
  int backoff_ms = kRetryInitialMs;
  const auto given_up = [this] {
    return draining_.load() &&
           Clock::now().time_since_epoch() >= std::chrono::nanoseconds(give_up_at_ns_.load());
  };
  for (;;) {
    if (given_up()) {
      // Stopping, and the time to drain ran out against a failing store.
      stats_.lost.fetch_add(n, std::memory_order_relaxed);
      break;
    }
    const auto t0 = Clock::now();
    // At most one batch in flight per partition: the queue stays the only
    // buffer, and its bound the only bound.
    store::Status s = storage_->WriteHeartbeats(lane->partition(), rows, &result);
    if (s.ok()) {
      // Before the counts: a caller that sees the batch counted sees its ids
      // named or forgotten.
      recently_unknown_.Update(rows, result.unknown);
      regions_.Learn(rows, result);
      stats_.write_latency_us.Observe(
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count());
      stats_.batch_size.Observe(static_cast<int64_t>(rows.size()));
      stats_.batches.fetch_add(1, std::memory_order_relaxed);
      stats_.written.fetch_add(result.written, std::memory_order_relaxed);
      stats_.stale.fetch_add(result.stale, std::memory_order_relaxed);
      stats_.coalesced.fetch_add(coalesced, std::memory_order_relaxed);
      stats_.unknown.fetch_add(result.unknown.size(), std::memory_order_relaxed);
      lane->NoteWriteSucceeded();
      break;
    }
    lane->NoteWriteFailed(base::SteadyNowMs());
    stats_.write_retries.fetch_add(1, std::memory_order_relaxed);
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min(backoff_ms * 2, kRetryMaxMs);
  }
  // Durable (or, stopping against a failing store, given up and counted):
  // these items no longer hold the lane's watermark back.
  lane->MarkWritten(items, n);
  // Release the strings now (the ids moved into the rows; the rest is small).
  for (size_t i = 0; i < n; ++i) items[i] = Heartbeat();
  lane->scratch.index.clear();
  lane->scratch.rows.clear();
}

void Batcher::ReaperLoop() {
  const auto interval = std::chrono::milliseconds(options_.reaper_interval_ms);
  while (!reaper_stop_.WaitFor(interval)) {
    // Held pools not known: no silence judged, dead reports still swept.
    const std::optional<store::HeldPools> held = HeldPoolsNow();
    for (auto& lane : lanes_) ReapPartition(lane.get(), held.value_or(store::HeldPools{}), !!held);
  }
}

int64_t Batcher::SilenceCutoff(Lane* lane) const {
  // Asked at write time too (Storage::SweepSilentContainers), so a pause that
  // ends between the reaper's look and its write still holds the sweep.
  if (hearing_->HearingForMs() < options_.dead_after_ms) return store::kNothingSilent;
  return BackByHearing(HeardUntil(lane), options_.dead_after_ms);
}

int64_t Batcher::BackByHearing(int64_t wall_ms, int64_t hearing_ms) const {
  // wall_ms is now or before (a watermark): onto the steady clock by its
  // distance from now, so that a step of the wall clock moves nothing.
  const int64_t wall_now = base::NowMs();
  const int64_t end = base::SteadyNowMs() - std::max<int64_t>(0, wall_now - wall_ms);
  return wall_ms - (end - hearing_->StartOfHearing(end, hearing_ms));
}

int64_t Batcher::HeardUntil(Lane* lane) const {
  const int64_t watermark = lane->Watermark();
  // Asked after the lane's set: an item leaves the set only once stored or
  // held back by the storage, so it is seen in one of the two.
  const int64_t held = storage_->OldestHeldBackMs(lane->partition());
  return held != 0 ? std::min(watermark, held - 1) : watermark;
}

void Batcher::NoteDeaths(const std::vector<store::DeadContainer>& dead) {
  uint64_t reported = 0;
  for (const auto& d : dead) reported += d.reported ? 1 : 0;
  stats_.dead_reported.fetch_add(reported, std::memory_order_relaxed);
  stats_.dead_silent.fetch_add(dead.size() - reported, std::memory_order_relaxed);
  recent_deaths_.Add(base::NowMs(), dead);
  if (options_.on_deaths) options_.on_deaths(DescribeDeaths(dead));
}

std::optional<store::HeldPools> Batcher::HeldPoolsNow() {
  store::HeldPools held;
  if (!options_.live_by_pool) return held;
  if (hearing_->HearingForMs() < options_.dead_after_ms) return std::nullopt;
  // From the lanes' least watermark (BackByHearing grows with it): a lane
  // still writing its backlog counts fewer silent, never more.
  int64_t heard_until = base::NowMs();
  for (auto& lane : lanes_) heard_until = std::min(heard_until, HeardUntil(lane.get()));
  std::vector<store::PoolSilence> silent;
  // A failed count keeps the pools held as they were, and judges no silence.
  const int64_t cutoff = BackByHearing(heard_until, options_.dead_after_ms);
  if (!storage_->CountSilent(cutoff, &silent).ok()) return std::nullopt;
  held_pools_ = mass_silence_->Update(silent, options_.live_by_pool());
  held.pools = held_pools_;
  // The grace is silence heard, as dead_after_ms is.
  held.cutoff_ms = BackByHearing(heard_until, options_.mass_silence_grace_ms);
  return held;
}

void Batcher::ReapPartition(Lane* lane, const store::HeldPools& held, bool judge_silence) {
  // Bounded sweeps, one after another, until one finds less than a full one.
  for (;;) {
    store::SilenceSweep sweep;
    const auto cutoff = [this, lane, judge_silence] {
      return judge_silence ? SilenceCutoff(lane) : store::kNothingSilent;
    };
    store::Status s =
        storage_->SweepSilentContainers(lane->partition(), cutoff, held, kReapBatchRows, &sweep);
    if (!s.ok()) return;  // Busy or an error: nothing written; the next tick retries
    const int64_t dead = sweep.held_dead + sweep.marked_dead;
    stats_.sessions_ended.fetch_add(static_cast<uint64_t>(sweep.sessions_ended),
                                    std::memory_order_relaxed);
    stats_.dead_marked.fetch_add(static_cast<uint64_t>(dead), std::memory_order_relaxed);
    if (!sweep.dead.empty()) NoteDeaths(sweep.dead);
    if (dead < kReapBatchRows || reaper_stop_.stopped()) return;
  }
}

}  // namespace batcher
