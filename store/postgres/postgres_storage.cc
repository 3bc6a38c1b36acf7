#include "store/postgres/postgres_storage.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "base/clock.h"
#include "store/postgres/lane.h"
#include "store/list_page.h"
#include "store/postgres/lifecycle_sql.h"
#include "store/postgres/result_job.h"

namespace store {
namespace {

constexpr int64_t kMigrationLockTimeoutMs = 2000;
constexpr int kMigrationAttempts = 10;

// Reader connections' bounds: a read waits at most this long for a lock (a
// migration), runs at most this long, and its answer is waited for at most
// this long client side (a stalled link).
constexpr int64_t kReaderLockTimeoutMs = 2000;
constexpr int64_t kReaderStatementTimeoutMs = 5000;
constexpr int64_t kReaderIoTimeoutMs = 5000;

// A read-only connection with every wait bounded.
Status ConnectReader(const std::string& uri, const std::string& name,
                     std::unique_ptr<PgConn>* out) {
  std::unique_ptr<PgConn> conn;
  RETURN_IF_ERROR(PgConn::Connect(uri, name, &conn));
  conn->set_io_timeout_ms(kReaderIoTimeoutMs);
  RETURN_IF_ERROR(conn->Exec("SET lock_timeout = " + std::to_string(kReaderLockTimeoutMs) +
                             "; SET statement_timeout = " +
                             std::to_string(kReaderStatementTimeoutMs)));
  *out = std::move(conn);
  return Status::Ok();
}

// The capacity counts of the database, read on a connection of its own by
// partition 0's reader (one GROUP BY a refresh a node); the other
// partitions' readers count nothing, so the mirror's sum is the database's.
class PgCapacityReader : public CapacityReader {
 public:
  PgCapacityReader(std::string uri, int busy_timeout_ms, bool counts_all)
      : uri_(std::move(uri)), busy_timeout_ms_(busy_timeout_ms), counts_all_(counts_all) {}
  Status Read(std::vector<CapacityCount>* counts, bool* unchanged) override {
    *unchanged = false;  // PostgreSQL has no cheap "nothing committed since" test
    if (!counts_all_) {
      counts->clear();
      return Status::Ok();
    }
    if (conn_ == nullptr || !conn_->ok()) {
      conn_.reset();
      RETURN_IF_ERROR(ConnectReader(uri_, "edgealloc-mirror", &conn_));
      // A read that waits on a lock (a migration) gives up, as SQLite's does.
      RETURN_IF_ERROR(conn_->Exec("SET lock_timeout = " + std::to_string(busy_timeout_ms_)));
    }
    PgResult r;
    RETURN_IF_ERROR(conn_->Run(pgsql::kCapacityCounts, {}, &r));
    counts->clear();
    for (int i = 0; i < r.rows(); ++i) {
      counts->push_back({r.String(i, 0), r.String(i, 1), r.String(i, 2), r.Int64(i, 3)});
    }
    return Status::Ok();
  }
  std::string name() const override { return "PostgreSQL"; }

 private:
  const std::string uri_;
  const int busy_timeout_ms_;
  const bool counts_all_;
  std::unique_ptr<PgConn> conn_;
};

// Version 1 to 2: sets lane_hash of the rows a version 1 node registered.
Status HashLanes(PgConn* conn) {
  PgResult ids;
  RETURN_IF_ERROR(conn->Run(pgsql::kIdsToHash, {}, &ids));
  constexpr int kChunk = 1000;
  for (int start = 0; start < ids.rows(); start += kChunk) {
    std::vector<PgParam> id, hash;
    for (int i = start; i < std::min(ids.rows(), start + kChunk); ++i) {
      id.push_back(P(ids.Text(i, 0)));
      hash.push_back(P(int64_t{LaneHash(ids.Text(i, 0))}));
    }
    RETURN_IF_ERROR(conn->Run(pgsql::kSetLaneHashes, {ArrayParam(id), ArrayParam(hash)}));
  }
  return Status::Ok();
}

// The schema version the database records: 0 when there is no schema yet.
// A read of edgealloc_meta only (ACCESS SHARE), which nothing but a
// migration ever blocks.
Status SchemaVersion(PgConn* conn, int64_t* version) {
  *version = 0;
  PgResult exists;
  RETURN_IF_ERROR(conn->Run(pgsql::kMetaExists, {}, &exists));
  if (exists.rows() == 0 || exists.IsNull(0, 0)) return Status::Ok();
  PgResult r;
  RETURN_IF_ERROR(conn->Run(pgsql::kGetSchemaVersion, {}, &r));
  if (r.rows() == 1) *version = r.Int64(0, 0);
  return Status::Ok();
}

Status TooNew(int64_t version) {
  return Status::InvalidArgument("the database's schema is version " + std::to_string(version) +
                                 ", newer than this edgealloc knows (" +
                                 std::to_string(pgsql::kSchemaVersion) + "); upgrade edgealloc");
}

// One attempt at the migration, in one transaction whose every lock wait
// gives up after kMigrationLockTimeoutMs.
Status MigrateOnce(PgConn* conn) {
  RETURN_IF_ERROR(conn->Exec("BEGIN"));
  Status s = conn->Exec("SET LOCAL lock_timeout = " + std::to_string(kMigrationLockTimeoutMs));
  if (s.ok()) {
    s = conn->Exec("SELECT pg_advisory_xact_lock(hashtextextended('edgealloc schema', 0))");
  }
  // Another node may have migrated while this one waited for the lock.
  int64_t version = 0;
  if (s.ok()) s = SchemaVersion(conn, &version);
  if (s.ok() && version > pgsql::kSchemaVersion) s = TooNew(version);
  if (s.ok() && version < pgsql::kSchemaVersion) {
    s = conn->Exec(pgsql::kSchema);
    if (s.ok() && version == 1) s = HashLanes(conn);
    if (s.ok()) s = conn->Run(pgsql::kSetSchemaVersion, {P(int64_t{pgsql::kSchemaVersion})});
  }
  if (!s.ok()) {
    (void)conn->Exec("ROLLBACK");
    return s;
  }
  return conn->Exec("COMMIT");
}

// Creates or migrates the schema, one node at a time, and only when the
// database's version is behind: DDL takes ACCESS EXCLUSIVE on `containers`
// even when it has nothing to do, and waiting for it behind any long
// transaction (a pg_dump, an operator's open psql) would queue every
// statement of every node behind this one. A migration that cannot have
// its locks within kMigrationLockTimeoutMs gives up and tries again, so
// the rest of the fleet is never held for longer than that.
Status Migrate(PgConn* conn) {
  int64_t version = 0;
  RETURN_IF_ERROR(SchemaVersion(conn, &version));
  if (version == pgsql::kSchemaVersion) return Status::Ok();
  if (version > pgsql::kSchemaVersion) return TooNew(version);
  Status s;
  for (int attempt = 1; attempt <= kMigrationAttempts; ++attempt) {
    s = MigrateOnce(conn);
    if (!s.IsBusy()) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(200 * attempt));
  }
  return Status::Busy("the schema migration could not take its locks in " +
                      std::to_string(kMigrationAttempts) + " attempts of " +
                      std::to_string(kMigrationLockTimeoutMs) +
                      " ms (a long transaction holds `containers`: see pg_stat_activity): " +
                      s.message());
}

}  // namespace

bool IsPostgresUri(std::string_view db) {
  return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0 ||
         db.find("dbname=") != std::string_view::npos || db.find("host=") != std::string_view::npos;
}

PostgresStorage::PostgresStorage(const StorageOptions& options)
    : uri_(options.db), program_(options.program), policy_(options.policy) {}

PostgresStorage::~PostgresStorage() { StopWriters(); }

void PostgresStorage::StopWriters() {
  for (auto& writer : writers_) writer->Stop();
}

Status PostgresStorage::Open(const StorageOptions& options, std::unique_ptr<PostgresStorage>* out) {
  std::unique_ptr<PostgresStorage> storage(new PostgresStorage(options));
  {
    std::unique_ptr<PgConn> conn;
    RETURN_IF_ERROR(PgConn::Connect(options.db, options.program, &conn));
    RETURN_IF_ERROR(Migrate(conn.get()));
  }
  {
    std::unique_ptr<PgConn> conn;
    RETURN_IF_ERROR(ConnectReader(options.db, options.program + " reader", &conn));
    // The first read connection of the pool.
    base::MutexLock lock(&storage->readers_mu_);
    storage->readers_.push_back(std::move(conn));
  }
  if (options.pg_writers < 1) {
    return Status::InvalidArgument("PostgreSQL needs at least one writer connection");
  }
  for (int p = 0; p < options.pg_writers; ++p) {
    PgWriterOptions writer_options;
    writer_options.warn = options.warn;
    storage->writers_.push_back(std::make_unique<PgWriter>(
        options.db, options.program + " writer " + std::to_string(p), writer_options));
    storage->writers_.back()->Start();
  }
  *out = std::move(storage);
  return Status::Ok();
}

Status PostgresStorage::WithReader(const std::function<Status(PgConn*)>& fn) {
  // The writers cannot reach the database (their last attempt got no answer
  // or no connection, WriterStats::failing; the next commit or probe that
  // works ends it): a read would wait its timeouts for the same answer, and
  // the reads queued behind it theirs; say so at once.
  for (const auto& writer : writers_) {
    if (writer->down() || writer->stats().failing.load(std::memory_order_relaxed) != 0) {
      return Status::IOError("unavailable: this node cannot reach PostgreSQL now; retry");
    }
  }
  std::unique_ptr<PgConn> conn;
  {
    base::MutexLock lock(&readers_mu_);
    if (!readers_.empty()) {
      conn = std::move(readers_.back());
      readers_.pop_back();
    }
  }
  bool pooled = conn != nullptr && conn->ok();
  if (!pooled) {
    conn.reset();
    RETURN_IF_ERROR(ConnectReader(uri_, program_ + " reader", &conn));
  }
  Status s = fn(conn.get());
  if (!s.ok() && pooled && !conn->ok() && !IsNoAnswer(s)) {
    // A pooled connection can only find out on use that the server went
    // away (a restart, a failover): a read is safe to run again, once, on
    // a fresh connection, rather than answering 503 while the database is
    // up. If the database is down, the connect fails at once. Not after no
    // answer came at all (a stalled path): a connect would wait out its
    // timeout too, and the read answer after twice the bound.
    conn.reset();
    RETURN_IF_ERROR(ConnectReader(uri_, program_ + " reader", &conn));
    s = fn(conn.get());
  }
  if (conn->ok()) {
    base::MutexLock lock(&readers_mu_);
    readers_.push_back(std::move(conn));
  }
  return s;
}

template <typename Result>
void PostgresStorage::Submit(std::function<Status(PgConn*, Result*)> work,
                             std::function<void(Result)> done, std::string lock_key,
                             std::optional<PgStatement> first, PgRowLocks rows) {
  std::unique_ptr<PgJob> job = std::make_unique<ResultJob<Result>>(
      std::move(work), std::move(done), std::move(lock_key), std::move(first), std::move(rows));
  if (!writers_[0]->Submit(std::move(job))) {
    job->Done(writers_[0]->Refusal("the PostgreSQL write queue"));
  }
}

template void PostgresStorage::Submit<SessionResult>(
    std::function<Status(PgConn*, SessionResult*)>, std::function<void(SessionResult)>,
    std::string, std::optional<PgStatement>, PgRowLocks);

void PostgresStorage::Register(std::vector<ContainerSpec> specs, ContainerCallback done) {
  PgRowLocks rows;
  for (const ContainerSpec& c : specs) rows.ids.push_back(c.id);
  auto batch = std::make_shared<std::vector<ContainerSpec>>(std::move(specs));
  Submit<ContainerResult>(
      [batch](PgConn* conn, ContainerResult* out) {
        for (const ContainerSpec& c : *batch) {
          RETURN_IF_ERROR(conn->Run(pgsql::kUpsertContainer,
                                    {P(c.id), P(c.region), P(c.pool), P(c.latency_ms), P(c.data),
                                     P(int64_t{LaneHash(c.id)})}));
        }
        out->outcome = Outcome::kOk;
        out->count = static_cast<int64_t>(batch->size());
        return Status::Ok();
      },
      std::move(done), "", std::nullopt, std::move(rows));
}

namespace {

void ReadContainer(const PgResult& r, int row, ContainerInfo* c) {
  c->id = r.String(row, 0);
  c->region = r.String(row, 1);
  c->pool = r.String(row, 2);
  c->status = r.String(row, 3);
  c->latency_ms = r.Int64(row, 4);
  c->last_heartbeat_ms = r.Int64(row, 5);
  c->generation = r.Int64(row, 6);
  c->drain_requested = r.Int64(row, 7) != 0;
  c->data = r.String(row, 8);
  if (!r.IsNull(row, 9)) c->session_id = r.String(row, 9);
}

}  // namespace

ContainerResult PostgresStorage::GetContainer(std::string_view id) {
  const std::string key(id);
  ContainerResult result = Failed<ContainerResult>(Outcome::kNotFound, "no container " + key);
  Status s = WithReader([&](PgConn* conn) {
    PgResult r;
    RETURN_IF_ERROR(conn->Run(pgsql::kGetContainer, {P(key)}, &r));
    if (r.rows() == 0) return Status::Ok();
    result = ContainerResult{Outcome::kOk, {}, 0, ""};
    ReadContainer(r, 0, &result.container);
    return Status::Ok();
  });
  if (!s.ok()) return Failed<ContainerResult>(OutcomeOfError(s), s.ToString());
  return result;
}

Status PostgresStorage::ListContainers(const ContainerFilter& filter, const std::string& after,
                                      int limit, std::vector<ContainerInfo>* page,
                                      std::string* next_after) {
  page->clear();
  next_after->clear();
  auto or_null = [](const std::string& v) { return v.empty() ? Null() : P(v); };
  return WithReader([&](PgConn* conn) {
    PgResult r;
    RETURN_IF_ERROR(conn->Run(pgsql::kListContainers,
                              {P(after), or_null(filter.region), or_null(filter.pool),
                               or_null(filter.status), P(static_cast<int64_t>(limit) + 1),
                               P(ListExamineBound(limit))},
                              &r));
    PartitionPage<ContainerInfo> part;
    for (int i = 0; i < r.rows(); ++i) {
      // The row of the last id examined, when the bound was reached.
      if (r.Text(i, 10) != "t") {
        part.stopped_at = r.String(i, 0);
        continue;
      }
      ContainerInfo c;
      ReadContainer(r, i, &c);
      part.hits.push_back(std::move(c));
    }
    std::vector<PartitionPage<ContainerInfo>> parts;
    parts.push_back(std::move(part));
    MergePartitionPages(
        std::move(parts), limit, [](const ContainerInfo& c) -> const std::string& { return c.id; },
        page, next_after);
    return Status::Ok();
  });
}

void PostgresStorage::Drain(std::string id, ContainerCallback done) {
  Submit<ContainerResult>(
      [id](PgConn* conn, ContainerResult* out) {
        PgResult r;
        RETURN_IF_ERROR(conn->Run(pgsql::kDrain, {P(id)}, &r));
        if (r.rows() == 0) {
          *out = Failed<ContainerResult>(Outcome::kNotFound, "no container " + id);
          return Status::Ok();
        }
        out->outcome = Outcome::kOk;
        out->container.id = id;
        out->container.status = r.String(0, 0);
        out->container.drain_requested = out->container.status == "picked";
        return Status::Ok();
      },
      std::move(done), "", std::nullopt, PgRowLocks{{id}, {}});
}

void PostgresStorage::Remove(std::string id, ContainerCallback done) {
  Submit<ContainerResult>(
      [id](PgConn* conn, ContainerResult* out) {
        PgResult del;
        RETURN_IF_ERROR(conn->Run(pgsql::kRemoveUnpicked, {P(id)}, &del));
        if (del.changed() == 1) {
          out->outcome = Outcome::kOk;
          out->count = 1;
          return Status::Ok();
        }
        PgResult r;
        RETURN_IF_ERROR(conn->Run(pgsql::kContainerExists, {P(id)}, &r));
        *out = r.rows() > 0 ? Failed<ContainerResult>(Outcome::kConflict,
                                                      "container " + id +
                                                          " is picked; release it first")
                            : Failed<ContainerResult>(Outcome::kNotFound, "no container " + id);
        return Status::Ok();
      },
      std::move(done), "", std::nullopt, PgRowLocks{{id}, {}});
}

std::unique_ptr<CapacityReader> PostgresStorage::NewCapacityReader(int partition,
                                                                   int busy_timeout_ms) {
  return std::make_unique<PgCapacityReader>(uri_, busy_timeout_ms, partition == 0);
}

}  // namespace store
