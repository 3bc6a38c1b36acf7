#include "store/postgres/schema.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "store/postgres/lane.h"
#include "store/postgres/schema_sql.h"

namespace store {
namespace {

constexpr int64_t kMigrationLockTimeoutMs = 2000;
constexpr int kMigrationAttempts = 10;

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
    if (s.ok() && version >= 1 && version < pgsql::kDrainReportedVersion) {
      s = conn->Exec(pgsql::kOldDrainsAreReported);
    }
    if (s.ok()) s = conn->Run(pgsql::kSetSchemaVersion, {P(int64_t{pgsql::kSchemaVersion})});
  }
  if (!s.ok()) {
    (void)conn->Exec("ROLLBACK");
    return s;
  }
  return conn->Exec("COMMIT");
}

}  // namespace

Status MigrateSchema(PgConn* conn) {
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

}  // namespace store
