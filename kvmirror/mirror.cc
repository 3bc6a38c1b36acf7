#include "kvmirror/mirror.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <utility>

namespace kvmirror {

// One shard file and the connection that reads it. The connection belongs to
// whichever thread holds refresh_mu: the shard's refresh thread, or a caller
// of Start() / RefreshNow().
struct Mirror::ShardState {
  explicit ShardState(std::string p) : path(std::move(p)) {}
  const std::string path;
  std::mutex refresh_mu;
  std::unique_ptr<store::Db> db;  // GUARDED_BY(refresh_mu)
};

Mirror::Mirror(std::vector<std::string> shard_paths, int64_t refresh_ms, MirrorOptions options)
    : refresh_ms_(std::clamp(refresh_ms, kMinRefreshMs, kMaxRefreshMs)),
      options_(std::move(options)),
      parts_(shard_paths.size()),
      current_(std::make_shared<const Snapshot>()) {
  assert(!shard_paths.empty());
  for (auto& path : shard_paths) shards_.push_back(std::make_unique<ShardState>(std::move(path)));
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
    std::lock_guard<std::mutex> lock(wake_mu_);
    stop_ = true;
  }
  wake_cv_.notify_all();
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
  std::lock_guard<std::mutex> lock(error_mu_);
  return last_error_;
}

void Mirror::Loop(int i) {
  using Clock = std::chrono::steady_clock;
  const auto period = std::chrono::milliseconds(refresh_ms_);
  // Deadlines, not sleeps, so a period includes the refresh instead of being
  // added to it; after a stall (a slow read) it starts over from now rather
  // than catching up with a burst of reads.
  auto next = Clock::now() + period;
  std::unique_lock<std::mutex> lock(wake_mu_);
  for (;;) {
    if (wake_cv_.wait_until(lock, next, [this] { return stop_; })) return;
    lock.unlock();
    (void)RefreshShard(i);  // errors are counted in stats_ and last_error_
    lock.lock();
    next += period;
    const auto now = Clock::now();
    if (next <= now) next = now + period;
  }
}

store::Status Mirror::RefreshShard(int i) {
  ShardState* shard = shards_[i].get();
  std::lock_guard<std::mutex> lock(shard->refresh_mu);
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const Snapshot> part;
  store::Status s = ReadPart(shard, &part);
  const auto micros = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                std::chrono::steady_clock::now() - start)
                                                .count());
  stats_.last_refresh_micros.store(micros, std::memory_order_relaxed);
  stats_.total_refresh_micros.fetch_add(micros, std::memory_order_relaxed);
  if (!s.ok()) {
    stats_.refresh_errors.fetch_add(1, std::memory_order_relaxed);
    // Reopen next time: after an I/O error or a replaced file, a fresh
    // connection is the cheapest way back.
    shard->db.reset();
    std::lock_guard<std::mutex> error_lock(error_mu_);
    last_error_ = shard->path + ": " + s.ToString();
    return s;
  }
  if (options_.before_publish) options_.before_publish(i);
  Publish(i, std::move(part));
  stats_.refreshes.fetch_add(1, std::memory_order_relaxed);
  return s;
}

store::Status Mirror::ReadPart(ShardState* shard, std::shared_ptr<const Snapshot>* part) {
  if (shard->db == nullptr) {
    store::DbOptions options;
    options.read_only = true;
    options.busy_timeout_ms = options_.busy_timeout_ms;
    options.program = "edgealloc-mirror";
    store::Status s = store::Db::Open(shard->path, options, &shard->db);
    if (!s.ok()) return s;
  }
  store::Status s;
  Snapshot::Regions regions;
  // Taken before the read begins: no row it returns is older than this.
  const int64_t as_of_ms = store::NowMs();
  {
    store::StatementRef q = shard->db->Cached(kCountsSql, &s);
    if (!s.ok()) return s;
    for (;;) {
      bool row = false;
      s = q->Step(&row);
      if (!s.ok()) return s;  // the StatementRef resets, ending the read
      if (!row) break;
      // An unknown status (none exists under the schema's CHECK) is skipped.
      (void)regions[q->ColumnString(0)][q->ColumnString(1)].Add(q->ColumnText(2),
                                                                q->ColumnInt64(3));
    }
  }  // reset here: the read transaction ends before the snapshot is built
  *part = std::make_shared<const Snapshot>(as_of_ms, std::move(regions));
  return store::Status::Ok();
}

void Mirror::Publish(int i, std::shared_ptr<const Snapshot> part) {
  std::lock_guard<std::mutex> lock(publish_mu_);
  parts_[i] = std::move(part);
  current_.store(Snapshot::Merge(parts_));
}

}  // namespace kvmirror
