#ifndef EDGEALLOC_STORE_POSTGRES_RESULT_JOB_H_
#define EDGEALLOC_STORE_POSTGRES_RESULT_JOB_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/postgres/pg.h"
#include "store/postgres/pg_writer.h"
#include "store/result_job_base.h"
#include "store/types.h"

namespace store {

// A PgJob whose work is a function that fills a Result (see ResultJobBase),
// with the lock, first statement and rows it names to the writer.
template <typename Result>
class ResultJob : public ResultJobBase<PgJob, PgConn, Result> {
 public:
  using Base = ResultJobBase<PgJob, PgConn, Result>;
  ResultJob(typename Base::Work work, typename Base::Callback done,
            std::vector<std::string> lock_keys, std::optional<PgStatement> first,
            PgRowLocks rows)
      : Base(std::move(work), std::move(done)),
        lock_keys_(std::move(lock_keys)),
        first_(std::move(first)),
        rows_(std::move(rows)) {}
  void AddLockKeys(std::vector<std::string>* keys) const override {
    keys->insert(keys->end(), lock_keys_.begin(), lock_keys_.end());
  }
  void AddRowLocks(std::vector<std::string>* ids,
                   std::vector<std::string>* session_ids) const override {
    ids->insert(ids->end(), rows_.ids.begin(), rows_.ids.end());
    session_ids->insert(session_ids->end(), rows_.session_ids.begin(), rows_.session_ids.end());
  }
  std::optional<PgStatement> First() const override { return first_; }

 private:
  const std::vector<std::string> lock_keys_;
  const std::optional<PgStatement> first_;
  const PgRowLocks rows_;
};

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_RESULT_JOB_H_
