#include "store/shard.h"

#include "store/schema.h"

namespace store {

ReadPool::ReadPool(std::string path, DbOptions options)
    : path_(std::move(path)), options_(std::move(options)) {
  options_.read_only = true;
}

Status ReadPool::With(const std::function<Status(Db*)>& fn) {
  std::unique_ptr<Db> db;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      db = std::move(free_.back());
      free_.pop_back();
    }
  }
  if (db == nullptr) {
    Status s = Db::Open(path_, options_, &db);
    if (!s.ok()) return s;
  }
  Status s = fn(db.get());
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(std::move(db));
  return s;
}

Status OpenShardDb(const ShardMap& map, int i, const DbOptions& options, std::unique_ptr<Db>* out) {
  std::unique_ptr<Db> db;
  const std::string path = map.PathOf(i);
  Status s = Db::Open(path, options, &db);
  if (!s.ok()) return s;
  s = Migrate(db.get());
  if (!s.ok()) return s;
  const std::string layout = map.LayoutOf(i);
  s = db->Exec("INSERT INTO meta (key, value) VALUES ('shard_layout', '" + layout +
               "') ON CONFLICT (key) DO NOTHING");
  if (!s.ok()) return s;
  StatementRef q = db->Cached("SELECT value FROM meta WHERE key = 'shard_layout'", &s);
  if (!s.ok()) return s;
  bool row = false;
  s = q->Step(&row);
  if (!s.ok()) return s;
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
    Status s = OpenShardDb(map, i, options, &db);
    if (!s.ok()) return s;
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
