#ifndef EDGEALLOC_STORE_POSTGRES_RESULT_JOB_H_
#define EDGEALLOC_STORE_POSTGRES_RESULT_JOB_H_

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/postgres/pg.h"
#include "store/postgres/pg_writer.h"
#include "store/postgres/postgres_storage.h"
#include "store/types.h"

namespace store {

// A job of the writer whose work is a function filling a Result.
template <typename Result>
class ResultJob : public PgJob {
 public:
  ResultJob(std::function<Status(PgConn*, Result*)> work, std::function<void(Result)> done,
            std::string lock_key, std::optional<PgStatement> first, PgRowLocks rows)
      : work_(std::move(work)),
        done_(std::move(done)),
        lock_key_(std::move(lock_key)),
        first_(std::move(first)),
        rows_(std::move(rows)) {}
  void AddLockKeys(std::vector<std::string>* keys) const override {
    if (!lock_key_.empty()) keys->push_back(lock_key_);
  }
  void AddRowLocks(std::vector<std::string>* ids,
                   std::vector<std::string>* session_ids) const override {
    ids->insert(ids->end(), rows_.ids.begin(), rows_.ids.end());
    session_ids->insert(session_ids->end(), rows_.session_ids.begin(), rows_.session_ids.end());
  }
  std::optional<PgStatement> First() const override { return first_; }
  Status Apply(PgConn* conn) override {
    result_ = Result{};
    return work_(conn, &result_);
  }
  void Done(Status status) override {
    if (!status.ok()) return done_(Failed<Result>(OutcomeOfError(status), status.ToString()));
    done_(std::move(result_));
  }

 private:
  std::function<Status(PgConn*, Result*)> work_;
  std::function<void(Result)> done_;
  const std::string lock_key_;
  const std::optional<PgStatement> first_;
  const PgRowLocks rows_;
  Result result_;
};

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_RESULT_JOB_H_
