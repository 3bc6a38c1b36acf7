// OpenStorage: the one place that knows which engines exist.
#include "store/sqlite/sqlite_storage.h"
#include "store/storage.h"

namespace store {

Status OpenStorage(const StorageOptions& options, std::unique_ptr<Storage>* out) {
  std::unique_ptr<SqliteStorage> sqlite;
  RETURN_IF_ERROR(SqliteStorage::Open(options, &sqlite));
  *out = std::move(sqlite);
  return Status::Ok();
}

}  // namespace store
