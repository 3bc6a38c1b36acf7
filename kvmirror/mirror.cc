#include "kvmirror/mirror.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <string>
#include <utility>

#include "base/clock.h"

namespace kvmirror {

namespace {

// CPU time of the calling thread, in microseconds.
int64_t ThreadCpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

}  // namespace

Mirror::Mirror(std::vector<std::unique_ptr<store::CapacityReader>> readers, int64_t refresh_ms,
               MirrorOptions options)
    : refresh_ms_(std::clamp(refresh_ms, kMinRefreshMs, kMaxRefreshMs)),
      options_(std::move(options)),
      parts_(readers.size()),
      current_(std::make_shared<const Snapshot>()),
      history_(std::max<int64_t>(options_.history_interval_ms, 1)) {
  assert(!readers.empty());
  for (auto& reader : readers) {
    shards_.push_back(std::make_unique<ShardState>(std::move(reader)));
    shards_.back()->period_ms.store(refresh_ms_);
  }
  stats_.period_ms.store(refresh_ms_);
}

Mirror::~Mirror() { Stop(); }

store::Status Mirror::Start() {
  assert(!started_);
  started_ = true;
  store::Status first = RefreshNow();
  if (!first.ok()) {
    started_ = false;  // nothing runs; the owner may try again
    return first;
  }
  for (int i = 0; i < static_cast<int>(shards_.size()); ++i) {
    threads_.emplace_back([this, i] { Loop(i); });
  }
  return store::Status::Ok();
}

void Mirror::Stop() {
  {
    base::MutexLock lock(&wake_mu_);
    stop_ = true;
  }
  wake_cv_.SignalAll();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

store::Status Mirror::RefreshNow() {
  store::Status first;
  for (int i = 0; i < static_cast<int>(shards_.size()); ++i) {
    store::Status s = RefreshShard(i);
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

std::string Mirror::last_error() const {
  base::MutexLock lock(&error_mu_);
  return last_error_;
}

int64_t Mirror::PeriodAfter(int64_t cpu_micros) const {
  const double share = std::clamp(options_.max_cpu_share, 1e-9, 1.0);
  const double wanted_ms = std::ceil(static_cast<double>(cpu_micros) / 1000.0 / share);
  const int64_t longest = std::max(refresh_ms_, kMaxStretchedRefreshMs);
  if (wanted_ms >= static_cast<double>(longest)) return longest;
  return std::max(refresh_ms_, static_cast<int64_t>(wanted_ms));
}

void Mirror::Loop(int i) {
  using Clock = std::chrono::steady_clock;
  // For `top -H` and the benches, which count this thread's CPU.
  const std::string name = "mirror-" + std::to_string(i);
  (void)pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
  const ShardState& shard = *shards_[i];
  auto period = [&shard] { return std::chrono::milliseconds(shard.period_ms.load()); };
  // Deadlines, not sleeps, so a period includes the refresh instead of being
  // added to it; after a stall (a slow read) it starts over from now rather
  // than catching up with a burst of reads. The period is the one the latest
  // refresh set (PeriodAfter).
  auto next = Clock::now() + period();
  for (;;) {
    {
      base::MutexLock lock(&wake_mu_);
      while (!stop_ && Clock::now() < next) wake_cv_.WaitFor(&wake_mu_, next - Clock::now());
      if (stop_) return;
    }
    (void)RefreshShard(i);  // errors are counted in stats_ and last_error_
    next += period();
    const auto now = Clock::now();
    if (next <= now) next = now + period();
  }
}

store::Status Mirror::RefreshShard(int i) {
  ShardState* shard = shards_[i].get();
  base::MutexLock lock(&shard->refresh_mu);
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const Snapshot> part;
  bool unchanged = false;
  int64_t cpu_micros = 0;
  store::Status s = ReadPart(shard, &part, &unchanged, &cpu_micros);
  const auto micros = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                std::chrono::steady_clock::now() - start)
                                                .count());
  stats_.last_refresh_micros.store(micros, std::memory_order_relaxed);
  stats_.total_refresh_micros.fetch_add(micros, std::memory_order_relaxed);
  stats_.last_read_cpu_micros.store(static_cast<uint64_t>(cpu_micros), std::memory_order_relaxed);
  const int64_t period = PeriodAfter(cpu_micros);
  shard->period_ms.store(period);
  stats_.period_ms.store(period, std::memory_order_relaxed);
  if (!s.ok()) {
    stats_.refresh_errors.fetch_add(1, std::memory_order_relaxed);
    // The reader starts afresh next time; so does the comparison.
    shard->last_read.reset();
    base::MutexLock error_lock(&error_mu_);
    last_error_ = shard->reader->name() + ": " + s.ToString();
    return s;
  }
  if (options_.before_publish) options_.before_publish(i);
  Publish(i, std::move(part));
  if (unchanged) stats_.unchanged.fetch_add(1, std::memory_order_relaxed);
  stats_.refreshes.fetch_add(1, std::memory_order_relaxed);
  return s;
}

store::Status Mirror::ReadPart(ShardState* shard, std::shared_ptr<const Snapshot>* part,
                               bool* unchanged, int64_t* cpu_micros) {
  const int64_t cpu_start = ThreadCpuMicros();
  struct CountCpu {
    int64_t start;
    int64_t* out;
    ~CountCpu() { *out = std::max<int64_t>(ThreadCpuMicros() - start, 0); }
  } count_cpu{cpu_start, cpu_micros};
  // Taken before the read begins: no count it returns is older than this.
  const int64_t as_of_ms = base::NowMs();
  RETURN_IF_ERROR(shard->reader->Read(&shard->read, unchanged));
  if (*unchanged && shard->last_read != nullptr) {
    // Nothing committed since the last read began: its counts are still the
    // partition's as of now.
    *part = std::make_shared<const Snapshot>(as_of_ms, shard->last_read->regions(),
                                             shard->last_read->drained_ids());
    return store::Status::Ok();
  }
  // Otherwise build from the counts (which still hold the reader's last read
  // if it said unchanged while no part of ours was kept).
  *unchanged = false;
  Snapshot::Regions regions;
  for (const store::CapacityCount& c : shard->read.counts) {
    // An unknown status (none exists under the schema's CHECK) is skipped.
    StatusCounts& counts = regions[c.region][c.pool];
    if (counts.Add(c.status, c.count)) counts.AddSlots(c.status, c.slots, c.slots_used);
    // Drained counts as such only once it drains (a picked one finishes
    // its session first).
    if (c.status == "draining") counts.drained += c.drained;
  }
  auto drained = std::make_shared<DrainedIds>(shard->read.drained_ids.begin(),
                                              shard->read.drained_ids.end());
  *part = std::make_shared<const Snapshot>(as_of_ms, std::move(regions), std::move(drained));
  shard->last_read = *part;
  return store::Status::Ok();
}

void Mirror::Publish(int i, std::shared_ptr<const Snapshot> part) {
  base::MutexLock lock(&publish_mu_);
  parts_[i] = std::move(part);
  std::shared_ptr<const Snapshot> merged = Snapshot::Merge(parts_, ++published_);
  current_.Store(merged);
  // At most one sample an interval: most publishes are only compared.
  (void)history_.Add(*merged);
}

}  // namespace kvmirror
