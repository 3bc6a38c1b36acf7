// SqliteStorage's webhook delivery cursors (Storage::LeaseWebhook), in
// shard 0's file, written by its writer.
#include <string>

#include "base/clock.h"
#include "store/sqlite/sqlite_storage.h"
#include "store/sqlite/webhook_sql.h"

namespace store {

Status SqliteStorage::LeaseWebhook(const std::string& tenant, const std::string& owner,
                                   int64_t lease_ms, bool* held, std::string* cursor) {
  *held = false;
  bool got = false;
  std::string text;
  RETURN_IF_ERROR(shards_[0]->writer->RunSync([&](Db* db) {
    StatementRef q;
    RETURN_IF_ERROR(db->Cached(sql::kLeaseWebhook, &q));
    q->Bind(1, tenant);
    q->Bind(2, owner);
    q->Bind(3, base::NowMs());
    q->Bind(4, lease_ms);
    RETURN_IF_ERROR(q->Step(&got));
    // SQLite makes a RETURNING statement's change at its first step.
    if (got) text = q->ColumnString(0);
    return Status::Ok();
  }));
  *held = got;
  if (got) *cursor = text;
  return Status::Ok();
}

Status SqliteStorage::AckWebhook(const std::string& tenant, const std::string& owner,
                                 const std::string& cursor, int64_t lease_ms, bool* held) {
  *held = false;
  bool got = false;
  RETURN_IF_ERROR(shards_[0]->writer->RunSync([&](Db* db) {
    StatementRef q;
    RETURN_IF_ERROR(db->Cached(sql::kAckWebhook, &q));
    q->Bind(1, tenant);
    q->Bind(2, owner);
    q->Bind(3, cursor);
    q->Bind(4, base::NowMs());
    q->Bind(5, lease_ms);
    return q->Step(&got);
  }));
  *held = got;
  return Status::Ok();
}

}  // namespace store
