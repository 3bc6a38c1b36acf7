// OpenStorage: the one place that knows which engines exist.
#include <libpq-fe.h>
#include <sqlite3.h>

#include "store/postgres/postgres_storage.h"
#include "store/sqlite/sqlite_storage.h"
#include "store/storage.h"

namespace store {

std::string DbForDisplay(std::string_view db) {
  std::string out(db);
  if (!IsPostgresUri(db)) return out;
  // URI form: scheme://user:PASSWORD@host...
  if (size_t scheme = out.find("://"); scheme != std::string::npos) {
    const size_t start = scheme + 3;
    const size_t at = out.find('@', start);
    const size_t colon = out.find(':', start);
    if (at != std::string::npos && colon != std::string::npos && colon < at) {
      out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // key=value form, and ?password= in a URI's query.
  for (size_t p = out.find("password="); p != std::string::npos;
       p = out.find("password=", p + 1)) {
    const size_t value = p + 9;
    size_t end = out.find_first_of(" &", value);
    if (end == std::string::npos) end = out.size();
    out.replace(value, end - value, "***");
  }
  return out;
}

std::string SqliteLibraryVersion() { return sqlite3_libversion(); }

std::string LibpqLibraryVersion() {
  // PQlibVersion: major * 10000 + minor (PostgreSQL 10 and later).
  const int v = PQlibVersion();
  return std::to_string(v / 10000) + "." + std::to_string(v % 10000);
}

const char* EngineName(std::string_view db) { return IsPostgresUri(db) ? "postgresql" : "sqlite"; }

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
