#include "batcher/batcher.h"

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "store/postgres/pg.h"
#include "store/sqlite/db.h"
#include "store/sqlite/shard.h"
#include "store/sqlite/sqlite_storage.h"
#include "tests/support/broken_reads.h"
#include "tests/support/engines.h"
#include "tests/support/temp_dir.h"
#include "tests/support/eventually.h"

namespace {

using batcher::Batcher;
using batcher::BatcherOptions;
using batcher::Heartbeat;
using batcher::SubmitResult;
using store::Db;
using store::Status;
using State = Heartbeat::State;

// What a test looks at in one container row.
struct Row {
  bool found = false;
  std::string status;
  int64_t last_heartbeat_ms = 0;
  int64_t reported_ts_ms = 0;
  double load = 0;
  std::optional<std::string> session_id;
  int64_t drain_requested = 0;
  int64_t dead_reported = 0;
  int64_t drain_reported = 0;
};

// A pool with direct SQL for setting the scene. Either SQLite shards in a
// temp folder, their writers started (the default: the cases about shards
// and SQLite's writer), or either engine through store::OpenStorage:
//   Pool pool(EDGEALLOC_ENGINES);
// runs the case once on SQLite and once on PostgreSQL (with one writer, so
// that one partition's batching is what the case counts; the spread over
// several is storage_test's and the last case here).
class Pool {
 public:
  explicit Pool(int shards = 1, int write_lock_timeout_ms = 10000)
      : map_(dir_.File("pool.db"), shards) {
    options_.sync = store::Sync::kNormal;  // the tests count transactions, not fsyncs
    options_.write_lock_timeout_ms = write_lock_timeout_ms;
    const store::DbOptions& options = options_;
    Status s = store::OpenShards(map_, options, {}, &shards_);
    INFO(s.ToString());
    REQUIRE(s.ok());
    storage_ = std::make_unique<store::SqliteStorage>(ptrs(), map_, store::ClaimPolicy{});
  }
  // "sqlite" for the shards of the first constructor.
  std::string engine() const { return engine_ != nullptr ? engine_->engine : "sqlite"; }
  explicit Pool(const std::string& engine, int pg_writers = 1)
      : map_(dir_.File("pool.db"), 1),
        engine_(std::make_unique<testing::Engine>(engine, store::ClaimPolicy{}, pg_writers)) {
    storage_ = std::move(engine_->storage);
    options_.sync = store::Sync::kNormal;
    if (engine == "postgres") {
      REQUIRE(store::PgConn::Connect(engine_->db, "batcher_test", &pg_).ok());
    } else {
      REQUIRE(Db::Open(engine_->db, options_, &db_).ok());
    }
  }
  ~Pool() {
    if (storage_ != nullptr) storage_->StopWriters();
    for (auto& shard : shards_) shard->writer->Stop();
  }

  const store::ShardMap& map() const { return map_; }
  const store::DbOptions& options() const { return options_; }
  store::Storage* storage() { return storage_.get(); }
  // SQLite shards only.
  store::Shard& shard(int i) {
    REQUIRE(engine_ == nullptr);
    return *shards_[static_cast<size_t>(i)];
  }
  std::vector<store::Shard*> ptrs() {
    std::vector<store::Shard*> out;
    for (auto& shard : shards_) out.push_back(shard.get());
    return out;
  }

  // Inserts containers (SQLite shards: straight into shard `i`), available,
  // with the given last heartbeat.
  void Add(const std::vector<std::string>& ids, int64_t last_heartbeat_ms, int i = 0) {
    if (engine_ != nullptr) {
      std::vector<store::ContainerSpec> specs;
      for (const std::string& id : ids) specs.push_back({id, "weur", "chrome", 0, "{}", 1, {}});
      std::promise<store::ContainerResult> done;
      storage_->Register(specs, [&](store::ContainerResult r) { done.set_value(std::move(r)); });
      REQUIRE(done.get_future().get().outcome == store::Outcome::kOk);
      for (const std::string& id : ids) {
        Run("UPDATE containers SET last_heartbeat_ms = ?2 WHERE id = ?1", id, last_heartbeat_ms);
      }
      return;
    }
    Status s = shard(i).writer->RunSync([&](Db* db) {
      Status st;
      for (const std::string& id : ids) {
        store::StatementRef q;
        st = db->Cached(
            "INSERT INTO containers (id, region, pool, status, last_heartbeat_ms) "
            "VALUES (?1, 'weur', 'chrome', 'available', ?2)",
            &q);
        if (!st.ok()) return st;
        q->Bind(1, id);
        q->Bind(2, last_heartbeat_ms);
        st = q->Run();
        if (!st.ok()) return st;
      }
      return st;
    });
    INFO(s.ToString());
    REQUIRE(s.ok());
  }
  void Add(const std::string& id, int64_t last_heartbeat_ms = base::NowMs(), int i = 0) {
    Add(std::vector<std::string>{id}, last_heartbeat_ms, i);
  }

  // Runs `sql` (binding ?1 = id; SQL both engines read) through the writer
  // of shard i, or on the test's own connection to an engine.
  void Exec(const char* sql, const std::string& id, int i = 0) {
    if (engine_ != nullptr) return Run(sql, id, std::nullopt);
    Status s = shard(i).writer->RunSync([&](Db* db) {
      Status st;
      store::StatementRef q;
      RETURN_IF_ERROR(db->Cached(sql, &q));
      q->Bind(1, id);
      return q->Run();
    });
    INFO(s.ToString());
    REQUIRE(s.ok());
  }

  // What the allocator's claim does to a container of one slot, as direct
  // statements: its slot taken, and the session's row.
  void Claim(const std::string& id, const std::string& session, int i = 0) {
    static constexpr char kClaimSql[] =
        "UPDATE containers SET status = 'picked', generation = generation + 1, "
        "slots_used = 1, slot_map = '1' WHERE id = ?1 AND status = 'available'";
    static constexpr char kSessionSql[] =
        "INSERT INTO sessions (session_id, container_id, slot, generation, tenant, "
        "lease_expires_at_ms, claimed_at_ms) "
        "SELECT 's-' || id, id, 0, generation, 'acme', 9999999999999, 1 FROM containers "
        "WHERE id = ?1";
    Exec(kClaimSql, id, i);
    Exec(kSessionSql, id, i);
    REQUIRE(Get(id, i).session_id == "s-" + id);
    (void)session;
  }

  Row Get(const std::string& id, int i = 0) {
    static constexpr char kRowSql[] =
        "SELECT status, last_heartbeat_ms, reported_ts_ms, load, "
        "(SELECT s.session_id FROM sessions s WHERE s.container_id = containers.id), "
        "CASE WHEN drain_requested THEN 1 ELSE 0 END, CASE WHEN dead_reported THEN 1 ELSE 0 END, "
        "CASE WHEN drain_reported THEN 1 ELSE 0 END "
        "FROM containers WHERE id = ?1";
    Row row;
    if (pg_ != nullptr) {
      store::PgResult r;
      REQUIRE(pg_->Run(PgSql(kRowSql), {store::P(id)}, &r).ok());
      row.found = r.rows() == 1;
      if (!row.found) return row;
      row.status = r.String(0, 0);
      row.last_heartbeat_ms = r.Int64(0, 1);
      row.reported_ts_ms = r.Int64(0, 2);
      row.load = r.IsNull(0, 3) ? 0 : std::stod(r.String(0, 3));
      if (!r.IsNull(0, 4)) row.session_id = r.String(0, 4);
      row.drain_requested = r.Int64(0, 5);
      row.dead_reported = r.Int64(0, 6);
      row.drain_reported = r.Int64(0, 7);
      return row;
    }
    const auto read = [&](Db* db) {
      Status st;
      store::StatementRef q;
      st = db->Cached(kRowSql, &q);
      if (!st.ok()) return st;
      q->Bind(1, id);
      st = q->Step(&row.found);
      if (!st.ok() || !row.found) return st;
      row.status = q->ColumnString(0);
      row.last_heartbeat_ms = q->ColumnInt64(1);
      row.reported_ts_ms = q->ColumnInt64(2);
      row.load = q->ColumnDouble(3);
      if (!q->ColumnIsNull(4)) row.session_id = q->ColumnString(4);
      row.drain_requested = q->ColumnInt64(5);
      row.dead_reported = q->ColumnInt64(6);
      row.drain_reported = q->ColumnInt64(7);
      return st;
    };
    Status s = db_ != nullptr ? read(db_.get()) : shard(i).reads->With(read);
    INFO(s.ToString());
    REQUIRE(s.ok());
    return row;
  }

  uint64_t Transactions(int i = 0) { return storage_->writer_stats(i).transactions.load(); }

 private:
  // `sql` with ?N written $N, kept for the life of the pool (PgConn keys
  // prepared statements by the text's address).
  const char* PgSql(const char* sql) {
    auto& text = pg_sql_[sql];
    if (text.empty()) {
      text = sql;
      for (size_t p = text.find('?'); p != std::string::npos; p = text.find('?', p)) text[p] = '$';
    }
    return text.c_str();
  }
  // Runs `sql` with ?1 = id and ?2 = value (if any) on the test's connection.
  void Run(const char* sql, const std::string& id, std::optional<int64_t> value) {
    if (pg_ != nullptr) {
      std::vector<store::PgParam> params{store::P(id)};
      if (value) params.push_back(store::P(*value));
      Status s = pg_->Run(PgSql(sql), params);
      INFO(s.ToString());
      REQUIRE(s.ok());
      return;
    }
    store::StatementRef q;
    Status s = db_->Cached(sql, &q);
    if (s.ok()) {
      q->Bind(1, id);
      if (value) q->Bind(2, *value);
      s = q->Run();
    }
    INFO(s.ToString());
    REQUIRE(s.ok());
  }

  testing::TempDir dir_;
  store::DbOptions options_;
  store::ShardMap map_;
  std::vector<std::unique_ptr<store::Shard>> shards_;
  std::unique_ptr<testing::Engine> engine_;  // its storage moved to storage_
  std::unique_ptr<store::Storage> storage_;  // dies before the shards
  std::unique_ptr<Db> db_;                   // the test's own, to an engine's SQLite file
  std::unique_ptr<store::PgConn> pg_;        // the test's own, to an engine's PostgreSQL
  std::map<const char*, std::string> pg_sql_;
};

Heartbeat Beat(std::string id, std::optional<int64_t> ts = std::nullopt,
               std::optional<double> load = std::nullopt, State state = State::kNone) {
  Heartbeat h;
  h.container_id = std::move(id);
  h.ts_ms = ts;
  h.load = load;
  h.state = state;
  h.accepted_ms = base::NowMs();
  return h;
}

// The default options, but for how long a batch waits to fill.
BatcherOptions WaitingMs(int batch_wait_ms) {
  BatcherOptions options;
  options.batch_wait_ms = batch_wait_ms;
  return options;
}

std::vector<std::string> Ids(const std::string& prefix, int n) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back(prefix + std::to_string(i));
  return ids;
}

std::vector<Heartbeat> Beats(const std::vector<std::string>& ids) {
  std::vector<Heartbeat> out;
  for (const std::string& id : ids) out.push_back(Beat(id));
  return out;
}

// Polls `done` every few ms for at most `limit`; true once it holds.
bool WaitFor(const std::function<bool()>& done,
             std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  return testing::Eventually(done, limit);
}

}  // namespace

TEST_CASE("batcher: 100 queued heartbeats become one transaction and 250 become three") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add(Ids("c-", 250), 1);

  SECTION("100 queued before the batching thread starts: one transaction") {
    Batcher b(pool.storage(), WaitingMs(60000));
    REQUIRE(b.Submit(Beats(Ids("c-", 100))).accepted());
    CHECK(b.QueueDepth() == 100);
    const uint64_t before = pool.Transactions();
    b.Start();
    // A full batch does not wait for batch_wait_ms.
    REQUIRE(WaitFor([&] { return b.stats().written.load() == 100; }));
    CHECK(pool.Transactions() - before == 1);
    b.Stop();
    CHECK(b.stats().batches.load() == 1);
    CHECK(b.stats().batch_size.count() == 1);
    CHECK(b.stats().batch_size.sum() == 100);
    CHECK(b.stats().batch_size.CumulativeCount(5) == 0);  // le 50
    CHECK(b.stats().batch_size.CumulativeCount(6) == 1);  // le 100
    CHECK(b.stats().write_latency_us.count() == 1);
    CHECK(b.QueueDepth() == 0);
  }

  SECTION("250 in one request to a running batcher: three transactions") {
    Batcher b(pool.storage(), WaitingMs(100));
    b.Start();
    const uint64_t before = pool.Transactions();
    REQUIRE(b.Submit(Beats(Ids("c-", 250))).accepted());
    REQUIRE(WaitFor([&] { return b.stats().written.load() == 250; }));
    CHECK(pool.Transactions() - before == 3);
    CHECK(b.stats().batches.load() == 3);
    CHECK(b.stats().batch_size.sum() == 250);
    b.Stop();
    CHECK(pool.Get("c-249").last_heartbeat_ms > 1);
  }
}

TEST_CASE(
    "batcher: coalesced heartbeats of one container keep the newest ts and an older ts changes "
    "nothing") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add("c-1", 1);
  Batcher b(pool.storage(), WaitingMs(0));

  // Queued before the thread starts, so they share one batch. Plain reports
  // fold into one row; each state report is a row of its own, in order.
  std::vector<Heartbeat> items;
  items.push_back(Beat("c-1", 100, 0.1));
  items.push_back(Beat("c-1", 150, 0.15));                // folded into the first
  items.push_back(Beat("c-1", 120));                      // older: folded, liveness only
  items.push_back(Beat("c-1", 300, 0.3, State::kDraining));
  items.push_back(Beat("c-1", 200, 0.2, State::kReady));  // older than 300: changes nothing
  const int64_t newest_accept = items.back().accepted_ms;
  REQUIRE(b.Submit(std::move(items)).accepted());
  // Submit stamps items no earlier than its own clock (batcher.cc), which may
  // have ticked since the last Beat (seen under ASan): the newest accept is
  // then the time of the Submit.
  const int64_t submitted = base::NowMs();
  b.Start();
  REQUIRE(WaitFor([&] { return b.stats().written.load() == 3; }));
  Row row = pool.Get("c-1");
  CHECK(row.reported_ts_ms == 300);
  CHECK(row.load == Approx(0.3));
  CHECK(row.status == "draining");
  if (pool.engine() == "postgres") {
    // The accept on the database's clock (types.h HeartbeatRow; one
    // machine here: the clocks agree to a few ms).
    CHECK(row.last_heartbeat_ms >= newest_accept - 1000);
    CHECK(row.last_heartbeat_ms <= base::NowMs() + 1000);
  } else {
    CHECK(row.last_heartbeat_ms >= newest_accept);
    CHECK(row.last_heartbeat_ms <= submitted);
  }
  CHECK(b.stats().coalesced.load() == 2);
  CHECK(b.stats().stale.load() == 1);
  CHECK(b.stats().batches.load() == 1);

  // A later batch with an older ts: liveness only, the report changes nothing.
  std::vector<Heartbeat> stale;
  stale.push_back(Beat("c-1", 250, 0.9, State::kReady));
  const int64_t stale_accept = stale.back().accepted_ms;
  REQUIRE(b.Submit(std::move(stale)).accepted());
  REQUIRE(WaitFor([&] { return b.stats().written.load() == 4; }));
  row = pool.Get("c-1");
  CHECK(row.reported_ts_ms == 300);
  CHECK(row.load == Approx(0.3));
  CHECK(row.status == "draining");
  CHECK(row.last_heartbeat_ms >= stale_accept);
  CHECK(b.stats().stale.load() == 2);

  // No ts counts as current: it applies, and keeps the stored ts.
  REQUIRE(b.Submit({Beat("c-1", std::nullopt, 0.5, State::kReady)}).accepted());
  REQUIRE(WaitFor([&] { return b.stats().written.load() == 5; }));
  row = pool.Get("c-1");
  CHECK(row.reported_ts_ms == 300);
  CHECK(row.load == Approx(0.5));
  CHECK(row.status == "available");
  b.Stop();
  const auto& st = b.stats();
  CHECK(st.accepted.load() == st.written.load() + st.coalesced.load() + st.unknown.load());
}

// Found by tests/server/api_model_test.py: one batch must end as the same
// reports written one after another would, wherever the batch bounds fall.
TEST_CASE("batcher: reports of one container in one batch end as they would one after another") {
  struct Case {
    const char* name;
    std::vector<Heartbeat> items;
    const char* status;
  };
  std::vector<Case> cases;
  cases.push_back({"dead then draining stays dead",
                   {Beat("c-1", std::nullopt, std::nullopt, State::kDead),
                    Beat("c-1", std::nullopt, std::nullopt, State::kDraining)},
                   "dead"});
  cases.push_back({"an old ts, then a state without ts, which is current",
                   {Beat("c-1", 1000), Beat("c-1", std::nullopt, std::nullopt, State::kDraining)},
                   "draining"});
  const std::string engine = EDGEALLOC_ENGINES;
  for (Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      Pool pool(engine);
      pool.Add("c-1", 1);
      pool.Exec("UPDATE containers SET reported_ts_ms = 5000 WHERE id = ?1", "c-1");
      Batcher b(pool.storage(), WaitingMs(0));
      const uint64_t n = c.items.size();
      REQUIRE(b.Submit(std::move(c.items)).accepted());  // one batch: queued before Start
      b.Start();
      REQUIRE(WaitFor([&] { return b.stats().written.load() + b.stats().coalesced.load() == n; }));
      b.Stop();
      CHECK(pool.Get("c-1").status == c.status);
    }
  }
}

TEST_CASE(
    "batcher: a lone heartbeat is written within batch_wait_ms (a bound with a wide margin)") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add("c-1", 1);
  Batcher b(pool.storage(), WaitingMs(50));
  b.Start();
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(b.Submit({Beat("c-1")}).accepted());
  REQUIRE(WaitFor([&] { return pool.Get("c-1").last_heartbeat_ms > 1; },
                  std::chrono::milliseconds(2000)));
  const auto elapsed =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  INFO("written after " << elapsed.count() << " ms");
  CHECK(elapsed.count() <= 50 + 500);
  // It did wait for company: the bound is also a wait.
  CHECK(elapsed.count() >= 30);
  b.Stop();
}

TEST_CASE("batcher: a heartbeat never undoes a claim that lands between enqueue and write") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add(std::vector<std::string>{"c-ready", "c-drain", "c-dead", "c-plain"}, 1);
  Batcher b(pool.storage());
  // Queued while every container is available...
  std::vector<Heartbeat> items;
  items.push_back(Beat("c-ready", 10, 0.1, State::kReady));
  items.push_back(Beat("c-drain", 10, 0.1, State::kDraining));
  items.push_back(Beat("c-dead", 10, 0.1, State::kDead));
  items.push_back(Beat("c-plain", 10, 0.1));
  REQUIRE(b.Submit(std::move(items)).accepted());
  // ...then claimed before the batch is written.
  for (const char* id : {"c-ready", "c-drain", "c-dead", "c-plain"}) pool.Claim(id, id);
  b.Start();
  b.Stop();
  CHECK(b.stats().written.load() == 4);

  for (const char* id : {"c-ready", "c-drain", "c-dead", "c-plain"}) {
    INFO(id);
    Row row = pool.Get(id);
    CHECK(row.status == "picked");
    CHECK(row.session_id == std::string("s-") + id);
    CHECK(row.last_heartbeat_ms > 1);
  }
  CHECK(pool.Get("c-drain").drain_reported == 1);  // its own drain, for after the session
  CHECK(pool.Get("c-dead").dead_reported == 1);
  CHECK(pool.Get("c-ready").dead_reported == 0);
}

TEST_CASE("batcher: a full queue refuses whole requests and nothing of them is ever written") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add(Ids("a-", 6), 1);
  pool.Add(Ids("b-", 6), 1);
  pool.Add(Ids("c-", 4), 1);
  BatcherOptions options;
  options.queue_capacity = 10;
  Batcher b(pool.storage(), options);

  CHECK(b.Submit(Beats(Ids("a-", 6))).code == SubmitResult::Code::kAccepted);
  SubmitResult refused = b.Submit(Beats(Ids("b-", 6)));  // 6 + 6 > 10
  CHECK(refused.code == SubmitResult::Code::kOverloaded);
  CHECK(refused.items == 6);
  CHECK(b.Submit(Beats(Ids("c-", 4))).accepted());  // exactly fills it
  CHECK(b.Submit({Beat("a-0")}).code == SubmitResult::Code::kOverloaded);
  CHECK(b.QueueDepth() == 10);
  CHECK(b.QueueDepth(0) == 10);

  b.Start();
  b.Stop();
  for (const std::string& id : Ids("a-", 6)) CHECK(pool.Get(id).last_heartbeat_ms > 1);
  for (const std::string& id : Ids("c-", 4)) CHECK(pool.Get(id).last_heartbeat_ms > 1);
  for (const std::string& id : Ids("b-", 6)) CHECK(pool.Get(id).last_heartbeat_ms == 1);
  CHECK(b.stats().accepted.load() == 10);
  CHECK(b.stats().refused.load() == 7);
  CHECK(b.stats().written.load() == 10);
}

TEST_CASE("batcher: under concurrent overload every accepted item is written and no refused one") {
  constexpr int kThreads = 4;
  constexpr int kRequests = 200;
  constexpr int kItems = 4;
  Pool pool(EDGEALLOC_ENGINES);
  std::vector<std::string> all;
  for (int t = 0; t < kThreads; ++t) {
    for (int r = 0; r < kRequests; ++r) {
      for (int i = 0; i < kItems; ++i) {
        all.push_back("t" + std::to_string(t) + "-r" + std::to_string(r) + "-" + std::to_string(i));
      }
    }
  }
  pool.Add(all, 1);
  BatcherOptions options;
  options.queue_capacity = 32;
  options.batch_max = 16;
  options.batch_wait_ms = 2;
  Batcher b(pool.storage(), options);
  b.Start();

  std::vector<std::vector<bool>> taken(kThreads, std::vector<bool>(kRequests));
  std::atomic<int> stopping{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRequests; ++r) {
        std::vector<std::string> ids;
        for (int i = 0; i < kItems; ++i) {
          ids.push_back("t" + std::to_string(t) + "-r" + std::to_string(r) + "-" +
                        std::to_string(i));
        }
        SubmitResult result = b.Submit(Beats(ids));
        // Checked on the main thread: Catch2 v2 assertions are not thread-safe.
        if (result.code == SubmitResult::Code::kStopping) stopping.fetch_add(1);
        taken[t][r] = result.accepted();
        // A little room between requests, so that some fit and some do not.
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  REQUIRE(stopping.load() == 0);
  b.Stop();

  uint64_t accepted = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (int r = 0; r < kRequests; ++r) {
      if (taken[t][r]) accepted += kItems;
      for (int i = 0; i < kItems; ++i) {
        const std::string id =
            "t" + std::to_string(t) + "-r" + std::to_string(r) + "-" + std::to_string(i);
        const bool written = pool.Get(id).last_heartbeat_ms > 1;
        if (written != taken[t][r]) FAIL(id << " written=" << written << " taken=" << taken[t][r]);
      }
    }
  }
  const auto& st = b.stats();
  INFO("accepted " << st.accepted.load() << " refused " << st.refused.load());
  CHECK(accepted > 0);
  CHECK(st.accepted.load() == accepted);
  CHECK(st.written.load() == accepted);
  CHECK(st.accepted.load() + st.refused.load() == uint64_t{kThreads * kRequests * kItems});
  CHECK(st.lost.load() == 0);
  CHECK(b.QueueDepth() == 0);
}

TEST_CASE("batcher: Stop() writes everything accepted before it returns and then refuses") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add(Ids("c-", 500), 1);
  Batcher b(pool.storage(), WaitingMs(60000));  // nothing leaves on its own: Stop must flush
  b.Start();
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < 10; ++round) {
        if (!b.Submit(Beats(Ids("c-", 500))).accepted()) refused.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  REQUIRE(refused.load() == 0);  // counted by the threads: Catch2 v2 is not thread-safe
  const int64_t last_accept = base::NowMs();
  const auto t0 = std::chrono::steady_clock::now();
  b.Stop();
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30));

  const auto& st = b.stats();
  CHECK(st.accepted.load() == 10000);
  CHECK(st.accepted.load() == st.written.load() + st.coalesced.load());
  // Stamped at accept (SQLite) or by the database as Stop wrote them
  // (PostgreSQL): either way before Stop returned.
  const int64_t stopped = pool.engine() == "postgres" ? base::NowMs() + 1000 : last_accept;
  for (const std::string& id : Ids("c-", 500)) {
    Row row = pool.Get(id);
    REQUIRE(row.last_heartbeat_ms > 1);
    REQUIRE(row.last_heartbeat_ms <= stopped);
  }
  SubmitResult late = b.Submit(Beats(Ids("c-", 3)));
  CHECK(late.code == SubmitResult::Code::kStopping);
  CHECK(st.refused_stopping.load() == 3);
  CHECK(st.refused.load() == 0);
}

TEST_CASE(
    "batcher: a silent container dies and its session ends while ready revives it and draining "
    "stops claims") {
  Pool pool(EDGEALLOC_ENGINES);
  const int64_t now = base::NowMs();
  pool.Add("c-silent", now - 10000);
  pool.Add("c-held", now - 10000);
  pool.Claim("c-held", "c-held");
  pool.Add("c-alive", now);
  BatcherOptions options;
  options.dead_after_ms = 300;
  options.batch_wait_ms = 0;
  Batcher b(pool.storage(), options);
  CHECK(b.options().reaper_interval_ms == 75);
  b.Start();

  // c-alive keeps beating; the others stay silent.
  std::atomic<bool> beating{true};
  std::thread beater([&] {
    while (beating) {
      (void)b.Submit({Beat("c-alive")});
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  REQUIRE(WaitFor([&] { return pool.Get("c-silent").status == "dead"; }));
  REQUIRE(WaitFor([&] { return pool.Get("c-held").status == "dead"; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // past dead_after_ms
  CHECK(pool.Get("c-alive").status == "available");
  Row held = pool.Get("c-held");
  CHECK_FALSE(held.session_id.has_value());
  // The reaper counts after its commit returned.
  REQUIRE(WaitFor([&] { return b.stats().dead_marked.load() == 2; }));
  CHECK(b.stats().sessions_ended.load() == 1);

  // A plain heartbeat is liveness only: dead stays dead until it says ready.
  const uint64_t written = b.stats().written.load();
  REQUIRE(b.Submit({Beat("c-silent")}).accepted());
  REQUIRE(WaitFor([&] { return b.stats().written.load() > written; }));
  CHECK(pool.Get("c-silent").status == "dead");

  REQUIRE(b.Submit({Beat("c-silent", std::nullopt, std::nullopt, State::kReady)}).accepted());
  REQUIRE(WaitFor([&] { return pool.Get("c-silent").status == "available"; },
                  std::chrono::milliseconds(250)));

  // draining: the container leaves the claimable set (the claim only takes
  // status = 'available').
  REQUIRE(b.Submit({Beat("c-alive", std::nullopt, std::nullopt, State::kDraining)}).accepted());
  REQUIRE(WaitFor([&] { return pool.Get("c-alive").status == "draining"; }));
  pool.Exec(
      "UPDATE containers SET status = 'picked', slots_used = 1, slot_map = '1' "
      "WHERE id = ?1 AND status = 'available'",
      "c-alive");
  CHECK(pool.Get("c-alive").status == "draining");
  beating = false;
  beater.join();
  b.Stop();
}

TEST_CASE(
    "batcher: a dead report on a picked container leaves it picked until the reaper ends its "
    "session") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add("c-1");
  pool.Claim("c-1", "c-1");
  BatcherOptions options;
  options.batch_wait_ms = 0;
  options.reaper_interval_ms = 60000;  // the write is checked before any sweep
  {
    Batcher b(pool.storage(), options);
    b.Start();
    REQUIRE(b.Submit({Beat("c-1", 5, 1.0, State::kDead)}).accepted());
    REQUIRE(WaitFor([&] { return b.stats().written.load() == 1; }));
    Row row = pool.Get("c-1");
    CHECK(row.status == "picked");
    CHECK(row.dead_reported == 1);
    b.Stop();
  }
  options.reaper_interval_ms = 20;
  Batcher b(pool.storage(), options);
  b.Start();
  REQUIRE(WaitFor([&] { return pool.Get("c-1").status == "dead"; }));
  b.Stop();  // the reaper counts after its commit; Stop joins it
  Row row = pool.Get("c-1");
  CHECK_FALSE(row.session_id.has_value());
  CHECK(row.dead_reported == 0);
  CHECK(b.stats().sessions_ended.load() == 1);
  CHECK(b.stats().dead_marked.load() == 1);
}

TEST_CASE("batcher: unknown container ids are counted and dropped") {
  SECTION("one shard: found out at write time") {
    Pool pool(EDGEALLOC_ENGINES);
    pool.Add("c-1", 1);
    Batcher b(pool.storage());
    SubmitResult r = b.Submit({Beat("c-1"), Beat("nope-1"), Beat("nope-2")});
    CHECK(r.accepted());
    CHECK(r.items == 3);
    b.Start();
    b.Stop();
    CHECK(b.stats().unknown.load() == 2);
    CHECK(b.stats().written.load() == 1);
    CHECK(b.stats().accepted.load() == 3);
    CHECK_FALSE(pool.Get("nope-1").found);
  }

  SECTION(
      "several shards: each id goes to the shard that holds it and unknown ones are dropped at "
      "submit") {
    Pool pool(2);
    pool.Add("in-0", 1, 0);
    pool.Add("in-1", 1, 1);
    Batcher b(pool.storage());
    SubmitResult r = b.Submit({Beat("in-0"), Beat("in-1"), Beat("nope")});
    CHECK(r.accepted());
    CHECK(r.unknown == 1);
    CHECK(b.QueueDepth(0) == 1);
    CHECK(b.QueueDepth(1) == 1);
    b.Start();
    b.Stop();
    CHECK(pool.Get("in-0", 0).last_heartbeat_ms > 1);
    CHECK(pool.Get("in-1", 1).last_heartbeat_ms > 1);
    CHECK(b.stats().unknown.load() == 1);
    CHECK(b.stats().written.load() == 2);
  }
}

TEST_CASE("batcher: with several shards a request that does not fit every shard is refused whole") {
  Pool pool(2);
  pool.Add(Ids("x-", 3), 1, 0);
  pool.Add(Ids("y-", 3), 1, 1);
  BatcherOptions options;
  options.queue_capacity = 3;
  Batcher b(pool.storage(), options);
  REQUIRE(b.Submit(Beats({"y-0", "y-1"})).accepted());
  // Fits shard 0, not shard 1: shard 0's reservation is rolled back.
  SubmitResult r = b.Submit(Beats({"x-0", "x-1", "y-2", "y-1"}));
  CHECK(r.code == SubmitResult::Code::kOverloaded);
  CHECK(b.QueueDepth(0) == 0);
  CHECK(b.QueueDepth(1) == 2);
  b.Start();
  b.Stop();
  CHECK(pool.Get("x-0", 0).last_heartbeat_ms == 1);
  CHECK(pool.Get("y-2", 1).last_heartbeat_ms == 1);
  CHECK(pool.Get("y-0", 1).last_heartbeat_ms > 1);
  CHECK(b.stats().refused.load() == 4);
}

TEST_CASE(
    "batcher: a batch the store refuses (write lock held elsewhere) is retried and never dropped") {
  Pool pool(1, /*write_lock_timeout_ms=*/30);
  pool.Add(Ids("c-", 20), 1);
  // Another process's writer, as the admin CLI would be: it holds the flock
  // and an open write transaction, so the shard's writer times out with Busy.
  std::unique_ptr<Db> other;
  store::DbOptions other_options = pool.options();
  other_options.program = "edgealloc admin";
  REQUIRE(Db::Open(pool.map().PathOf(0), other_options, &other).ok());
  auto txn = std::make_unique<store::Transaction>(other.get());
  REQUIRE(txn->Begin().ok());

  Batcher b(pool.storage(), WaitingMs(0));
  b.Start();
  REQUIRE(b.Submit(Beats(Ids("c-", 20))).accepted());
  REQUIRE(WaitFor([&] { return b.stats().write_retries.load() >= 2; }));
  CHECK(b.stats().written.load() == 0);

  txn.reset();  // rolls back and lets go of the lock
  REQUIRE(WaitFor([&] { return b.stats().written.load() == 20; }));
  b.Stop();
  CHECK(b.stats().lost.load() == 0);
  for (const std::string& id : Ids("c-", 20)) CHECK(pool.Get(id).last_heartbeat_ms > 1);
}

namespace {

// A writer job that holds the shard's writer thread inside its transaction
// until released, so that the jobs queued meanwhile are taken in one bulk.
class Gate : public store::WriteJob {
 public:
  explicit Gate(std::shared_future<void> open, std::atomic<bool>* entered)
      : open_(std::move(open)), entered_(entered) {}
  Status Apply(Db*) override {
    entered_->store(true);
    open_.wait();
    return Status::Ok();
  }
  void Done(Status) override {}
  bool solo() const override { return true; }

 private:
  std::shared_future<void> open_;
  std::atomic<bool>* entered_;
};

// An ordinary (group-commit) job, as a claim is: one UPDATE of `id`.
class Touch : public store::WriteJob {
 public:
  Touch(std::string id, std::atomic<bool>* done) : id_(std::move(id)), done_(done) {}
  Status Apply(Db* db) override {
    static constexpr char kSql[] = "UPDATE containers SET latency_ms = 7 WHERE id = ?1";
    Status s;
    store::StatementRef q;
    RETURN_IF_ERROR(db->Cached(kSql, &q));
    q->Bind(1, id_);
    return q->Run();
  }
  void Done(Status s) override { done_->store(s.ok()); }

 private:
  std::string id_;
  std::atomic<bool>* done_;
};

// Holds the writer with a Gate, queues a claim-like job and a batch of `n`
// heartbeats behind it, opens the gate, and returns the transactions that
// the claim-like job and the batch took together.
uint64_t TransactionsOfBatchBesideClaim(int n, int batch_max) {
  Pool pool;
  pool.Add(Ids("c-", n), 1);
  BatcherOptions options;
  options.batch_max = batch_max;
  options.batch_wait_ms = 0;
  Batcher b(pool.storage(), options);
  b.Start();
  store::Writer& writer = *pool.shard(0).writer;

  std::promise<void> open;
  std::atomic<bool> entered{false};
  REQUIRE(writer.Submit(std::make_unique<Gate>(open.get_future().share(), &entered)));
  REQUIRE(WaitFor([&] { return entered.load(); }));
  const uint64_t before = pool.Transactions();
  std::atomic<bool> touched{false};
  REQUIRE(writer.Submit(std::make_unique<Touch>("c-0", &touched)));
  REQUIRE(b.Submit(Beats(Ids("c-", n))).accepted());
  // Both wait behind the gate: the claim-like job and the lane's one batch.
  const bool queued = WaitFor([&] { return writer.stats().queued.load() == 2; });
  open.set_value();
  REQUIRE(queued);
  REQUIRE(WaitFor([&] { return b.stats().written.load() == static_cast<uint64_t>(n); }));
  REQUIRE(WaitFor([&] { return touched.load(); }));
  b.Stop();
  CHECK(pool.Get("c-0").last_heartbeat_ms > 1);
  // The gate's own transaction is the first one counted after `before`.
  return pool.Transactions() - before - 1;
}

}  // namespace

TEST_CASE("batcher: a batch of at most 100 rows rides in the claims' group commit") {
  CHECK(TransactionsOfBatchBesideClaim(100, 100) == 1);
}

TEST_CASE("batcher: a batch larger than 100 rows gets a transaction of its own") {
  CHECK(TransactionsOfBatchBesideClaim(150, 200) == 2);
}

TEST_CASE(
    "batcher: a state report already held changes only liveness and one not held still applies") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add(Ids("c-", 7), 1);
  // c-0 available: "ready" again. c-1 available with a dead report left on
  // it: "ready" must clear it. c-2 draining by its own report: "draining"
  // again. c-3 picked: "draining" must set drain_reported. c-4 dead: "dead"
  // again. c-5 picked and reported dead: "dead" again leaves it picked and
  // reported. c-6 drained by an operator: "ready" leaves it draining.
  pool.Exec("UPDATE containers SET dead_reported = true WHERE id = ?1", "c-1");
  pool.Exec("UPDATE containers SET status = 'draining', drain_reported = true WHERE id = ?1", "c-2");
  pool.Claim("c-3", "s3");
  pool.Exec("UPDATE containers SET status = 'dead' WHERE id = ?1", "c-4");
  pool.Claim("c-5", "s5");
  pool.Exec("UPDATE containers SET dead_reported = true WHERE id = ?1", "c-5");
  pool.Exec("UPDATE containers SET status = 'draining', drain_requested = true WHERE id = ?1",
            "c-6");

  Batcher b(pool.storage(), WaitingMs(0));
  b.Start();
  std::vector<Heartbeat> items;
  items.push_back(Beat("c-0", 10, 0.1, State::kReady));
  items.push_back(Beat("c-1", 10, 0.2, State::kReady));
  items.push_back(Beat("c-2", 10, 0.3, State::kDraining));
  items.push_back(Beat("c-3", 10, 0.4, State::kDraining));
  items.push_back(Beat("c-4", 10, 0.5, State::kDead));
  items.push_back(Beat("c-5", 10, 0.6, State::kDead));
  items.push_back(Beat("c-6", 10, 0.7, State::kReady));
  REQUIRE(b.Submit(std::move(items)).accepted());
  REQUIRE(WaitFor([&] { return b.stats().written.load() == 7; }));
  b.Stop();
  CHECK(b.stats().stale.load() == 0);

  const Row r0 = pool.Get("c-0"), r1 = pool.Get("c-1"), r2 = pool.Get("c-2");
  const Row r3 = pool.Get("c-3"), r4 = pool.Get("c-4"), r5 = pool.Get("c-5");
  const Row r6 = pool.Get("c-6");
  CHECK((r0.status == "available" && r0.dead_reported == 0 && r0.load == 0.1));
  CHECK((r1.status == "available" && r1.dead_reported == 0 && r1.load == 0.2));
  CHECK((r2.status == "draining" && r2.drain_reported == 1 && r2.load == 0.3));
  CHECK((r3.status == "picked" && r3.drain_reported == 1 && r3.drain_requested == 0 &&
         r3.load == 0.4));
  CHECK((r4.status == "dead" && r4.dead_reported == 0 && r4.load == 0.5));
  CHECK((r5.status == "picked" && r5.dead_reported == 1 && r5.session_id == "s-c-5"));
  CHECK((r6.status == "draining" && r6.drain_requested == 1 && r6.load == 0.7));
  for (const Row& r : {r0, r1, r2, r3, r4, r5, r6}) {
    CHECK(r.last_heartbeat_ms > 1);
    CHECK(r.reported_ts_ms == 10);
  }
}

// Issue #11, defect 7: a heartbeat accepted is liveness from the moment it is
// accepted, also while its lane, idle before, waits to fill its first batch.
TEST_CASE("batcher: a heartbeat waiting for its batch to fill keeps its container alive") {
  Pool pool(EDGEALLOC_ENGINES);
  BatcherOptions options;
  options.dead_after_ms = 2000;
  options.batch_wait_ms = 1000;  // the lone heartbeat waits this long for company
  options.reaper_interval_ms = 5;
  Batcher b(pool.storage(), options);
  b.Start();
  // A start holds every judgement for dead_after_ms of hearing: past it, the
  // reaper judges by the stamps and the lane's waiting heartbeats alone.
  std::this_thread::sleep_for(std::chrono::milliseconds(options.dead_after_ms + 200));
  // Silent too long from t0 + 200 on unless its waiting heartbeat counts;
  // once written (t0 + 1000) it is alive until t0 + 2000.
  const int64_t t0 = base::NowMs();
  pool.Add("c-1", t0 - 1800);
  REQUIRE(b.Submit(Beats({"c-1"})).accepted());
  REQUIRE(WaitFor([&] { return b.stats().written.load() == 1; }));
  b.Stop();
  const Row row = pool.Get("c-1");
  CHECK(row.status == "available");
  CHECK(row.last_heartbeat_ms >= t0);
  CHECK(b.stats().dead_marked.load() == 0);
}


// Issue #11, defect 5: a failed lookup of a container's shard is storage
// trouble, not an unknown container: nothing is taken and the caller hears
// it, rather than a 202 for a heartbeat that is then dropped.
TEST_CASE("batcher: with several shards, a lookup that fails refuses the request, never drops it") {
  testing::TempDir elsewhere;
  Pool pool(2);
  pool.Add("c-1", 1, /*i=*/1);
  testing::BrokenReads broken(&pool.shard(1), elsewhere.File("missing.db"), pool.options());
  {
    store::SqliteStorage storage({&pool.shard(0), &broken.shard}, pool.map(), {});
    Batcher b(&storage);
    b.Start();
    SubmitResult r = b.Submit(Beats({"c-1"}));
    CHECK(r.code == SubmitResult::Code::kUnavailable);
    CHECK(r.unknown == 0);
    CHECK(b.QueueDepth() == 0);
    b.Stop();
    CHECK(b.stats().unknown.load() == 0);
    CHECK(b.stats().accepted.load() == 0);
  }
  CHECK(pool.Get("c-1", 1).last_heartbeat_ms == 1);
}

// PostgreSQL's default of several writer connections: heartbeats of
// containers spread over the partitions (store/postgres/lane.h) each go
// through their own lane, all are written, and each lane's dead reaper marks
// the silent containers of its own partition dead, none of another's that
// is alive.
TEST_CASE("batcher: on PostgreSQL's several partitions every lane writes and reaps its own") {
  Pool pool("postgres", /*pg_writers=*/4);
  REQUIRE(pool.storage()->partitions() == 4);
  const int64_t now = base::NowMs();
  pool.Add(Ids("live-", 40), now);
  pool.Add(Ids("quiet-", 40), now - 60000);
  std::vector<int> lanes(4, 0);
  for (const std::string& id : Ids("live-", 40)) {
    int p = -1;
    REQUIRE(pool.storage()->PartitionOf(id, &p).ok());
    ++lanes[static_cast<size_t>(p)];
  }
  for (int n : lanes) REQUIRE(n > 0);  // every lane has work

  // A node judges none silent before it has heard for dead_after_ms
  // (batcher/hearing.h): the live ones go on reporting meanwhile.
  BatcherOptions options;
  options.dead_after_ms = 2000;
  options.reaper_interval_ms = 10;
  Batcher b(pool.storage(), options);
  REQUIRE(b.partitions() == 4);
  REQUIRE(b.Submit(Beats(Ids("live-", 40))).accepted());
  b.Start();
  int polls = 0;
  REQUIRE(WaitFor(
      [&] {
        if (++polls % 40 == 0) REQUIRE(b.Submit(Beats(Ids("live-", 40))).accepted());
        return b.stats().dead_marked.load() == 40;
      },
      std::chrono::milliseconds(30000)));
  b.Stop();
  CHECK(b.stats().dead_marked.load() == 40);
  CHECK(b.stats().written.load() >= 40);
  for (const std::string& id : Ids("live-", 40)) CHECK(pool.Get(id).status == "available");
  for (const std::string& id : Ids("quiet-", 40)) CHECK(pool.Get(id).status == "dead");
  uint64_t lanes_with_commits = 0;
  for (int p = 0; p < 4; ++p) lanes_with_commits += pool.Transactions(p) > 0 ? 1 : 0;
  CHECK(lanes_with_commits == 4);
}

// Stopping against a database that went away gives up on what is queued
// after kStopGiveUpMs for the whole drain, counted as lost: not
// kStopGiveUpMs a batch (dozens of batches behind a dead database were
// minutes, past any service manager's stop timeout).
TEST_CASE("batcher: Stop against a lost database ends in bounded time and counts what was lost") {
  Pool pool("postgres", /*pg_writers=*/2);
  pool.Add(Ids("c-", 200), 1);
  BatcherOptions options;
  options.batch_max = 10;
  options.batch_wait_ms = 0;
  Batcher b(pool.storage(), options);
  // Queued, with the batching threads not yet started: every batch is
  // still to write when the database goes.
  for (int r = 0; r < 10; ++r) REQUIRE(b.Submit(Beats(Ids("c-", 200))).accepted());
  testing::SharedPg().Stop();
  b.Start();
  const auto t0 = std::chrono::steady_clock::now();
  b.Stop();
  const auto took = std::chrono::steady_clock::now() - t0;
  INFO("took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
  // 20 batches or more a lane, each retried kStopGiveUpMs, would be minutes.
  CHECK(took < std::chrono::milliseconds(batcher::kStopGiveUpMs + 8000));
  CHECK(b.stats().lost.load() > 0);
  CHECK(b.stats().written.load() + b.stats().coalesced.load() + b.stats().lost.load() ==
        b.stats().accepted.load());
  testing::SharedPg().Start();
}
