// OpenStorage: the one place that knows which engines exist.
#include "store/postgres/postgres_storage.h"
#include "store/sqlite/sqlite_storage.h"
#include "store/storage.h"

namespace store {

Status OpenStorage(const StorageOptions& options, std::unique_ptr<Storage>* out) {
  if (IsPostgresUri(options.db)) {
    if (options.shards != 1) {
      return Status::InvalidArgument(
          "--shards is for SQLite files; a PostgreSQL database is one store for every node");
    }
    std::unique_ptr<PostgresStorage> postgres;
    RETURN_IF_ERROR(PostgresStorage::Open(options, &postgres));
    *out = std::move(postgres);
    return Status::Ok();
  }
  std::unique_ptr<SqliteStorage> sqlite;
  RETURN_IF_ERROR(SqliteStorage::Open(options, &sqlite));
  *out = std::move(sqlite);
  return Status::Ok();
}

}  // namespace store
