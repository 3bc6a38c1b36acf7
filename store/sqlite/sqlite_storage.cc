#include "store/sqlite/sqlite_storage.h"

#include <cassert>
#include <utility>

#include "store/clock_steps.h"
#include "store/sqlite/capacity_reader.h"

namespace store {

Status SqliteStorage::Open(const StorageOptions& options, std::unique_ptr<SqliteStorage>* out) {
  ShardMap map(options.db, options.shards);
  DbOptions db_options;
  db_options.sync = options.sync;
  db_options.program = options.program;
  std::vector<std::unique_ptr<Shard>> owned;
  RETURN_IF_ERROR(OpenShards(map, db_options, WriterOptions{}, &owned));
  std::vector<Shard*> shards;
  for (auto& shard : owned) shards.push_back(shard.get());
  auto storage = std::make_unique<SqliteStorage>(std::move(shards), map, options.policy);
  storage->owned_ = std::move(owned);
  storage->program_ = options.program;
  storage->warn_ = options.warn;
  *out = std::move(storage);
  return Status::Ok();
}

SqliteStorage::SqliteStorage(std::vector<Shard*> shards, ShardMap map, ClaimPolicy policy)
    : shards_(std::move(shards)),
      map_(std::move(map)),
      policy_(policy),
      registration_(map_.base_path() + ".register.lock") {
  assert(static_cast<int>(shards_.size()) == map_.shards());
  // Steps found before this storage opened were never on its rows' timeline.
  const int64_t stepped = WallClockSteps::Process().Read().stepped_ms;
  for (size_t i = 0; i < shards_.size(); ++i) {
    clocks_.push_back(std::make_unique<ShardClock>());
    clocks_.back()->shifted_ms.store(stepped);
    shards_[i]->writer->set_commit_signal(&commit_signal_);
  }
}

SqliteStorage::~SqliteStorage() {
  for (auto& shard : owned_) shard->writer->Stop();
  for (Shard* shard : shards_) shard->writer->set_commit_signal(nullptr);
}

void SqliteStorage::StopWriters() {
  for (Shard* shard : shards_) shard->writer->Stop();
}

const WriterStats& SqliteStorage::writer_stats(int partition) const {
  return shards_[static_cast<size_t>(partition)]->writer->stats();
}

std::unique_ptr<CapacityReader> SqliteStorage::NewCapacityReader(int partition,
                                                                 int busy_timeout_ms) {
  return std::make_unique<SqliteCapacityReader>(map_.PathOf(partition), busy_timeout_ms);
}

}  // namespace store
