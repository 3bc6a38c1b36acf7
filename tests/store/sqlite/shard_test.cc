#include "store/sqlite/shard.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "store/sqlite/schema.h"
#include "tests/support/db_queries.h"
#include "tests/support/temp_dir.h"

namespace {

using store::Db;
using store::DbOptions;
using store::Shard;
using store::ShardMap;
using store::Status;

std::string Layout(Db* db) {
  return testing::QueryText(db, "SELECT value FROM meta WHERE key = 'shard_layout'");
}

}  // namespace

TEST_CASE("shard: OpenShards creates, migrates and stamps every file and starts its writer") {
  testing::TempDir dir;
  ShardMap map(dir.File("pool.db"), 3);
  std::vector<std::unique_ptr<Shard>> shards;
  Status s = store::OpenShards(map, {}, {}, &shards);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(shards.size() == 3);
  for (int i = 0; i < 3; ++i) {
    Shard& shard = *shards[i];
    CHECK(shard.index == i);
    CHECK(shard.path == map.PathOf(i));
    CHECK(std::filesystem::exists(map.PathOf(i)));
    std::string layout;
    int version = 0;
    Status st = shard.writer->RunSync([&](Db* db) {
      layout = Layout(db);
      return store::SchemaVersion(db, &version);
    });
    REQUIRE(st.ok());
    CHECK(layout == map.LayoutOf(i));
    CHECK(version == store::kSchemaVersion);
  }
  CHECK_FALSE(std::filesystem::exists(dir.File("pool.db")));  // no base file with N > 1
}

TEST_CASE("shard: a file stamped with another layout is refused, naming both") {
  testing::TempDir dir;
  const std::string base = dir.File("pool.db");
  {
    std::unique_ptr<Db> db;
    REQUIRE(store::OpenShardDb(ShardMap(base, 2), 0, {}, &db).ok());
  }
  // The same file, reached as the only shard of a one-shard layout.
  ShardMap other(base + ".shard0-of-2", 1);
  std::unique_ptr<Db> db;
  Status s = store::OpenShardDb(other, 0, {}, &db);
  INFO(s.ToString());
  CHECK(s.IsInvalidArgument());
  CHECK_THAT(s.message(), Catch::Contains("0/2"));
  CHECK_THAT(s.message(), Catch::Contains("0/1"));
  CHECK(db == nullptr);

  std::vector<std::unique_ptr<Shard>> shards;
  CHECK(store::OpenShards(other, {}, {}, &shards).IsInvalidArgument());
  CHECK(shards.empty());
}

TEST_CASE("shard: reopening with the same --shards is accepted and keeps the data") {
  testing::TempDir dir;
  ShardMap map(dir.File("pool.db"), 2);
  for (int round = 0; round < 2; ++round) {
    std::vector<std::unique_ptr<Shard>> shards;
    REQUIRE(store::OpenShards(map, {}, {}, &shards).ok());
    int64_t count = -1;
    REQUIRE(shards[1]->writer->RunSync([&](Db* db) {
      Status s = db->Exec("INSERT INTO meta (key, value) VALUES ('round" +
                          std::to_string(round) + "', 'x')");
      if (!s.ok()) return s;
      store::StatementRef q;
      RETURN_IF_ERROR(db->Cached("SELECT count(*) FROM meta WHERE key LIKE 'round%'", &q));
      bool row = false;
      s = q->Step(&row);
      count = q->ColumnInt64(0);
      return s;
    }).ok());
    CHECK(count == round + 1);
  }
}

TEST_CASE("shard: a restart with another --shards is refused instead of starting an empty pool") {
  // shard_map.h: "i/N" is written into each file "so that a restart with
  // another N is refused". The files of N=1 and N=2 have different names, so
  // the stamp is never compared: the restart silently opens fresh, empty files
  // and the containers registered before are lost from view.
  testing::TempDir dir;
  const std::string base = dir.File("pool.db");
  {
    std::vector<std::unique_ptr<Shard>> shards;
    REQUIRE(store::OpenShards(ShardMap(base, 1), {}, {}, &shards).ok());
  }
  std::vector<std::unique_ptr<Shard>> shards;
  Status s = store::OpenShards(ShardMap(base, 2), {}, {}, &shards);
  INFO(s.ToString());
  CHECK_FALSE(s.ok());
  shards.clear();

  testing::TempDir dir2;
  const std::string base2 = dir2.File("pool.db");
  {
    std::vector<std::unique_ptr<Shard>> first;
    REQUIRE(store::OpenShards(ShardMap(base2, 2), {}, {}, &first).ok());
  }
  Status back = store::OpenShards(ShardMap(base2, 1), {}, {}, &shards);
  INFO(back.ToString());
  CHECK_FALSE(back.ok());
}

TEST_CASE("read_pool: sees what the writer committed, cannot write, and reuses its connection") {
  testing::TempDir dir;
  ShardMap map(dir.File("pool.db"), 1);
  std::vector<std::unique_ptr<Shard>> shards;
  REQUIRE(store::OpenShards(map, {}, {}, &shards).ok());
  Shard& shard = *shards[0];
  REQUIRE(shard.writer->RunSync([](Db* db) {
    return db->Exec("INSERT INTO meta (key, value) VALUES ('k', 'committed')");
  }).ok());

  Db* first = nullptr;
  std::string value;
  REQUIRE(shard.reads->With([&](Db* db) {
    first = db;
    CHECK(db->read_only());
    Status s;
    store::StatementRef q;
    RETURN_IF_ERROR(db->Cached("SELECT value FROM meta WHERE key = 'k'", &q));
    bool row = false;
    s = q->Step(&row);
    if (row) value = q->ColumnString(0);
    return s;
  }).ok());
  CHECK(value == "committed");

  Status write = shard.reads->With(
      [](Db* db) { return db->Exec("INSERT INTO meta (key, value) VALUES ('w', 'x')"); });
  CHECK_FALSE(write.ok());

  Db* second = nullptr;
  REQUIRE(shard.reads->With([&](Db* db) {
    second = db;
    return Status::Ok();
  }).ok());
  CHECK(second == first);
  // fn's error comes back as it is.
  CHECK(shard.reads->With([](Db*) { return Status::NotFound("nope"); }).IsNotFound());
}
