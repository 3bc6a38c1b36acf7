#include "store/sqlite/shard.h"

#include <filesystem>

#include "store/sqlite/schema.h"

namespace store {

ReadPool::ReadPool(std::string path, DbOptions options)
    : path_(std::move(path)), options_(std::move(options)) {
  options_.read_only = true;
}

Status ReadPool::With(const std::function<Status(Db*)>& fn) {
  std::unique_ptr<Db> db = free_.Take();
  if (db == nullptr) {
    RETURN_IF_ERROR(Db::Open(path_, options_, &db));
  }
  Status s = fn(db.get());
  free_.Put(std::move(db));
  return s;
}

namespace {

// Files of another --shards layout beside `map`'s: the base file when N > 1,
// "<base>.shard<i>-of-<M>" with M != N. Each layout has its own file names, so
// without this a restart with another --shards would start on empty files
// and leave every registered container behind.
Status CheckNoOtherLayout(const ShardMap& map) {
  namespace fs = std::filesystem;
  const fs::path root(map.base_path());
  const std::string stem = root.filename().string() + ".shard";
  const std::string wanted_suffix = "-of-" + std::to_string(map.shards());
  std::error_code ec;
  const fs::path dir = root.has_parent_path() ? root.parent_path() : fs::path(".");
  if (map.shards() > 1 && fs::exists(root, ec)) {
    return Status::InvalidArgument(root.string() + " holds a pool of --shards 1; start with "
                                   "--shards 1, or move it away to start a new pool");
  }
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(stem, 0) != 0) continue;
    const size_t of = name.find("-of-", stem.size());
    if (of == std::string::npos) continue;
    // "-of-<M>" and then the end, "-wal", "-shm" or ".lock".
    const size_t digits = of + 4;
    const size_t end = name.find_first_not_of("0123456789", digits);
    const std::string count = name.substr(digits, end == std::string::npos ? end : end - digits);
    if (count.empty()) continue;
    if ("-of-" + count != wanted_suffix) {
      return Status::InvalidArgument(entry.path().string() + " belongs to a pool of --shards " +
                                     count + "; start with that --shards, or move "
                                     "those files away to start a new pool");
    }
  }
  return Status::Ok();
}

}  // namespace

Status OpenShardDb(const ShardMap& map, int i, const DbOptions& options, std::unique_ptr<Db>* out) {
  RETURN_IF_ERROR(CheckNoOtherLayout(map));
  std::unique_ptr<Db> db;
  const std::string path = map.PathOf(i);
  RETURN_IF_ERROR(Db::Open(path, options, &db));
  RETURN_IF_ERROR(Migrate(db.get()));
  const std::string layout = map.LayoutOf(i);
  {
    // Every write holds the cross-process lock (docs/design.md rule 4), this one too.
    Transaction txn(db.get());
    RETURN_IF_ERROR(txn.Begin());
    RETURN_IF_ERROR(db->Exec("INSERT INTO meta (key, value) VALUES ('shard_layout', '" + layout +
                 "') ON CONFLICT (key) DO NOTHING"));
    RETURN_IF_ERROR(txn.Commit());
  }
  StatementRef q;
  RETURN_IF_ERROR(db->Cached("SELECT value FROM meta WHERE key = 'shard_layout'", &q));
  bool row = false;
  RETURN_IF_ERROR(q->Step(&row));
  if (row && q->ColumnText(0) != layout) {
    return Status::InvalidArgument(path + " was created as shard " + q->ColumnString(0) +
                                   " but is opened as shard " + layout +
                                   ": start with the --shards it was created with");
  }
  *out = std::move(db);
  return Status::Ok();
}

Status OpenShards(const ShardMap& map, const DbOptions& options, WriterOptions writer_options,
                  std::vector<std::unique_ptr<Shard>>* out) {
  std::vector<std::unique_ptr<Shard>> shards;
  for (int i = 0; i < map.shards(); ++i) {
    std::unique_ptr<Db> db;
    RETURN_IF_ERROR(OpenShardDb(map, i, options, &db));
    auto shard = std::make_unique<Shard>();
    shard->index = i;
    shard->path = map.PathOf(i);
    shard->reads = std::make_unique<ReadPool>(shard->path, options);
    shard->writer = std::make_unique<Writer>(std::move(db), writer_options);
    shard->writer->Start();
    shards.push_back(std::move(shard));
  }
  *out = std::move(shards);
  return Status::Ok();
}

}  // namespace store
