// The reader connections of PostgresStorage: connecting one, and the pool
// that reads (sessions, containers, pools) borrow one from.
#include "store/postgres/readers.h"

#include <utility>

#include "store/postgres/postgres_storage.h"

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
    RETURN_IF_ERROR(ConnectReader(uri_, program_ + " reader", &conn, fence_));
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
    RETURN_IF_ERROR(ConnectReader(uri_, program_ + " reader", &conn, fence_));
    s = fn(conn.get());
  }
  if (conn->ok()) {
    base::MutexLock lock(&readers_mu_);
    readers_.push_back(std::move(conn));
  }
  return s;
}

}  // namespace store
