#include "store/postgres/schema.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "store/postgres/lane.h"
#include "store/postgres/schema_sql.h"
#include "store/postgres/events_sql.h"
#include "store/postgres/selector_sql.h"
#include "store/postgres/webhook_sql.h"

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

// What a role needs to make or migrate edgealloc's schema, asked before
// trying: CREATE on the schema the tables go in (PostgreSQL 15 gives CREATE
// on public to the database's owner only) and, once the tables exist,
// owning them (only an owner may ALTER). Without this check the first
// statement of the schema failed with "permission denied for schema public"
// behind the schema's whole text.
constexpr char kMayMigrate[] = R"sql(
SELECT current_user, current_database(), COALESCE(current_schema(), ''),
       current_schema() IS NOT NULL AND has_schema_privilege(current_schema(), 'CREATE'),
       COALESCE((SELECT tableowner FROM pg_tables
                 WHERE schemaname = current_schema() AND tablename = 'containers'), ''),
       COALESCE((SELECT pg_has_role(current_user, tableowner, 'USAGE') FROM pg_tables
                 WHERE schemaname = current_schema() AND tablename = 'containers'), true)
)sql";

// Ok, or one line that says what the role lacks and what to run.
Status CheckMayMigrate(PgConn* conn) {
  PgResult r;
  RETURN_IF_ERROR(conn->Run(kMayMigrate, {}, &r));
  if (r.rows() != 1) return Status::IOError("the privilege check returned no row");
  const std::string role(r.Text(0, 0)), db(r.Text(0, 1)), schema(r.Text(0, 2));
  const std::string owner(r.Text(0, 4));
  if (schema.empty()) {
    return Status::InvalidArgument("the role " + role + " has no schema to create tables in (its "
                                   "search_path names none that exists) in database " + db);
  }
  if (r.Text(0, 3) != "t") {
    return Status::InvalidArgument(
        "the role " + role + " may not create tables in schema " + schema + " of database " + db +
        ", which edgealloc needs to make or migrate its schema; as a superuser run: ALTER "
        "DATABASE " + db + " OWNER TO " + role + "; (or: GRANT CREATE ON SCHEMA " + schema +
        " TO " + role + ";)");
  }
  if (r.Text(0, 5) != "t") {
    return Status::InvalidArgument(
        "the role " + role + " does not own edgealloc's tables in database " + db + " (" + owner +
        " does), so it cannot migrate them; start this version once as " + owner +
        ", or as a superuser run: REASSIGN OWNED BY " + owner + " TO " + role + ";");
  }
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
    if (version >= 1 && version < pgsql::kSessionsVersion) s = conn->Exec(pgsql::kMoveSessionsOut);
    if (s.ok()) s = conn->Exec(pgsql::kSchema.c_str());
    if (s.ok()) s = conn->Exec(pgsql::kNodeClaimCounts);
    if (s.ok()) s = conn->Exec(pgsql::kDbClockShifts);
    if (s.ok()) s = conn->Exec(pgsql::kNodeTenantLimits);
    if (s.ok()) s = conn->Exec(pgsql::kNodeHeardUntil);
    if (s.ok()) s = conn->Exec(pgsql::kContainerAttributes);
    if (s.ok()) s = conn->Exec(pgsql::kEvents);
    if (s.ok()) s = conn->Exec(pgsql::kWebhookCursors);
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
  const Status read = SchemaVersion(conn, &version);
  if (read.ok() && version == pgsql::kSchemaVersion) return Status::Ok();
  if (read.ok() && version > pgsql::kSchemaVersion) return TooNew(version);
  // A migration is due, or the version could not even be read (a role that
  // may not read edgealloc's tables): first what the role lacks, if anything.
  RETURN_IF_ERROR(CheckMayMigrate(conn));
  RETURN_IF_ERROR(read);
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
