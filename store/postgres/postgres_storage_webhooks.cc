// PostgresStorage's webhook delivery cursors (Storage::LeaseWebhook), by
// writer 0.
#include <string>

#include "store/postgres/pg_values.h"
#include "store/postgres/postgres_storage.h"
#include "store/postgres/webhook_sql.h"

namespace store {

Status PostgresStorage::LeaseWebhook(const std::string& tenant, const std::string& owner,
                                     int64_t lease_ms, bool* held, std::string* cursor) {
  *held = false;
  PgResult r;
  RETURN_IF_ERROR(writers_[0]->RunSync([&](PgConn* conn) {
    return conn->Run(pgsql::kLeaseWebhook, {P(tenant), P(owner), P(lease_ms)}, &r);
  }));
  *held = r.rows() > 0;
  if (*held) *cursor = r.String(0, 0);
  return Status::Ok();
}

Status PostgresStorage::AckWebhook(const std::string& tenant, const std::string& owner,
                                   const std::string& cursor, int64_t lease_ms, bool* held) {
  *held = false;
  PgResult r;
  RETURN_IF_ERROR(writers_[0]->RunSync([&](PgConn* conn) {
    return conn->Run(pgsql::kAckWebhook, {P(tenant), P(owner), P(cursor), P(lease_ms)}, &r);
  }));
  *held = r.rows() > 0;
  return Status::Ok();
}

}  // namespace store
