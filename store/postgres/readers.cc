// The reader connections of PostgresStorage: connecting one, and the pool
// that reads (sessions, containers, pools) borrow one from.
#include "store/postgres/readers.h"

#include <utility>

namespace store {
namespace {

constexpr int64_t kReaderLockTimeoutMs = 2000;
constexpr int64_t kReaderStatementTimeoutMs = 5000;
constexpr int64_t kReaderIoTimeoutMs = 5000;

}  // namespace

Status ConnectReader(const std::string& uri, const std::string& name, std::unique_ptr<PgConn>* out,
                     std::shared_ptr<PgFence> fence) {
  std::unique_ptr<PgConn> conn;
  RETURN_IF_ERROR(PgConn::Connect(uri, name, &conn, std::move(fence)));
  conn->set_io_timeout_ms(kReaderIoTimeoutMs);
  RETURN_IF_ERROR(
      conn->Exec("SET lock_timeout = " + std::to_string(kReaderLockTimeoutMs) +
                 "; SET statement_timeout = " + std::to_string(kReaderStatementTimeoutMs)));
  *out = std::move(conn);
  return Status::Ok();
}

Status PgReaderPool::Connect() {
  std::unique_ptr<PgConn> conn;
  RETURN_IF_ERROR(ConnectReader(uri_, name_, &conn, fence_));
  idle_.Put(std::move(conn));
  return Status::Ok();
}

Status PgReaderPool::With(const std::function<Status(PgConn*)>& fn) {
  std::unique_ptr<PgConn> conn = idle_.Take();
  bool pooled = conn != nullptr && conn->ok();
  if (!pooled) {
    conn.reset();
    RETURN_IF_ERROR(ConnectReader(uri_, name_, &conn, fence_));
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
    RETURN_IF_ERROR(ConnectReader(uri_, name_, &conn, fence_));
    s = fn(conn.get());
  }
  if (conn->ok()) idle_.Put(std::move(conn));
  return s;
}

}  // namespace store
