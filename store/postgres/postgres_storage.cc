#include "store/postgres/postgres_storage.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "base/clock.h"
#include "base/random.h"
#include "store/postgres/capacity_reader.h"
#include "store/postgres/readers.h"
#include "store/postgres/result_job.h"
#include "store/postgres/schema.h"

namespace store {
namespace {

// The program's name and 64 random bits: another storage, of this process
// or another, is another node.
std::string NewNodeId(const std::string& program) {
  unsigned char bits[8] = {};
  std::string error;
  if (!base::KernelRandomBytes(bits, sizeof(bits), &error)) {
    // Unlikely; then the clocks tell this start from others.
    const int64_t now = base::SteadyNowMs() ^ base::NowMs();
    std::memcpy(bits, &now, sizeof(bits));
  }
  char hex[17];
  for (size_t i = 0; i < sizeof(bits); ++i) std::snprintf(hex + 2 * i, 3, "%02x", bits[i]);
  return program + "/" + hex;
}

}  // namespace

bool IsPostgresUri(std::string_view db) {
  return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0 ||
         db.find("dbname=") != std::string_view::npos || db.find("host=") != std::string_view::npos;
}

PostgresStorage::PostgresStorage(const StorageOptions& options)
    : uri_(options.db),
      program_(options.program),
      policy_(options.policy),
      node_id_(NewNodeId(options.program)),
      fence_(std::make_shared<PgFence>(options.warn)),
      clock_steps_(std::make_shared<DbClockSteps>(options.warn)),
      readers_(options.db, options.program + " reader", fence_) {}

PostgresStorage::~PostgresStorage() { StopWriters(); }

void PostgresStorage::StopWriters() {
  for (auto& writer : writers_) writer->Stop();
}

Status PostgresStorage::Open(const StorageOptions& options, std::unique_ptr<PostgresStorage>* out) {
  std::unique_ptr<PostgresStorage> storage(new PostgresStorage(options));
  // A node that has seen nothing yet: what the listed hosts say, so that it
  // too refuses an old primary listed first.
  storage->fence_->Learn(options.db);
  {
    std::unique_ptr<PgConn> conn;
    RETURN_IF_ERROR(PgConn::Connect(options.db, options.program, &conn, storage->fence_));
    RETURN_IF_ERROR(MigrateSchema(conn.get()));
  }
  RETURN_IF_ERROR(storage->readers_.Connect());
  if (options.pg_writers < 1) {
    return Status::InvalidArgument("PostgreSQL needs at least one writer connection");
  }
  for (int p = 0; p < options.pg_writers; ++p) {
    PgWriterOptions writer_options;
    writer_options.warn = options.warn;
    writer_options.fence = storage->fence_;
    writer_options.clock_steps = storage->clock_steps_;
    storage->writers_.push_back(std::make_unique<PgWriter>(
        options.db, options.program + " writer " + std::to_string(p), writer_options));
    storage->writers_.back()->set_commit_signal(&storage->commit_signal_);
    storage->writers_.back()->Start();
    storage->deferred_.push_back(std::make_unique<DeferredHeartbeats>());
  }
  storage->listener_ = std::make_unique<PgEventListener>(
      options.db, options.program + " events", &storage->commit_signal_);
  *out = std::move(storage);
  return Status::Ok();
}

template <typename Result>
void PostgresStorage::Submit(std::function<Status(PgConn*, Result*)> work,
                             std::function<void(Result)> done,
                             std::vector<std::string> lock_keys,
                             std::optional<PgStatement> first, PgRowLocks rows) {
  std::unique_ptr<PgJob> job = std::make_unique<ResultJob<Result>>(
      std::move(work), std::move(done), std::move(lock_keys), std::move(first), std::move(rows));
  if (!writers_[0]->Submit(std::move(job))) {
    job->Done(writers_[0]->Refusal("the PostgreSQL write queue"));
  }
}

template void PostgresStorage::Submit<SessionResult>(
    std::function<Status(PgConn*, SessionResult*)>, std::function<void(SessionResult)>,
    std::vector<std::string>, std::optional<PgStatement>, PgRowLocks);
template void PostgresStorage::Submit<ContainerResult>(
    std::function<Status(PgConn*, ContainerResult*)>, std::function<void(ContainerResult)>,
    std::vector<std::string>, std::optional<PgStatement>, PgRowLocks);

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
  return readers_.With(fn);
}

std::unique_ptr<CapacityReader> PostgresStorage::NewCapacityReader(int partition,
                                                                   int busy_timeout_ms) {
  return std::make_unique<PgCapacityReader>(uri_, busy_timeout_ms, partition == 0, fence_);
}

}  // namespace store
