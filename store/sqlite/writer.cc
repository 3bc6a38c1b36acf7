#include "store/sqlite/writer.h"

#include <utility>

#include "store/group_writer_impl.h"

namespace store {

template class GroupWriter<WriteJob>;

namespace {

constexpr char kSavepointSql[] = "SAVEPOINT job";
constexpr char kReleaseSql[] = "RELEASE job";
constexpr char kRollbackToSql[] = "ROLLBACK TO job";

Status RunCached(Db* db, const char* sql) {
  StatementRef stmt;
  RETURN_IF_ERROR(db->Cached(sql, &stmt));
  return stmt->Run();
}

}  // namespace

Writer::Writer(std::unique_ptr<Db> db, WriterOptions options)
    : GroupWriter(db->path(), options), db_(std::move(db)), txn_(db_.get()) {}

Writer::~Writer() { Stop(); }

Status Writer::Begin(std::span<WriteJob*>*, Run, bool* again) {
  *again = false;
  return txn_.Begin();
}

Status Writer::Savepoint() { return RunCached(db_.get(), kSavepointSql); }

Status Writer::EndSavepoint(bool undo) {
  // On failure only this job's changes go; the savepoint is then released.
  if (undo) RETURN_IF_ERROR(RunCached(db_.get(), kRollbackToSql));
  return RunCached(db_.get(), kReleaseSql);
}

bool Writer::TransactionLost(const Status& outcome) { return !outcome.ok() && db_->InAutocommit(); }

Status Writer::Commit() {
  Status s = txn_.Commit();
  if (s.ok()) return s;
  // A COMMIT that failed at its fsync may still have put the whole group in
  // the WAL, which recovery then replays: the jobs are told they failed, but
  // not that nothing of them is there. A client retry with an idempotency
  // key finds out.
  return Status::IOError(kCommitOutcomeUnknown + s.message());
}

Status Writer::Rollback() {
  txn_.Rollback();
  return Status::Ok();
}

}  // namespace store
