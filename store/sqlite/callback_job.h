#ifndef EDGEALLOC_STORE_SQLITE_CALLBACK_JOB_H_
#define EDGEALLOC_STORE_SQLITE_CALLBACK_JOB_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "store/result_job_base.h"
#include "store/sqlite/shard.h"
#include "store/sqlite/writer.h"
#include "store/types.h"

namespace store {

// A WriteJob whose work is a function that fills a Result (see
// ResultJobBase); `needs_savepoint`: WriteJob::needs_savepoint.
template <typename Result>
class CallbackJob : public ResultJobBase<WriteJob, Db, Result> {
 public:
  using Base = ResultJobBase<WriteJob, Db, Result>;
  CallbackJob(typename Base::Work work, typename Base::Callback done, bool needs_savepoint)
      : Base(std::move(work), std::move(done)), needs_savepoint_(needs_savepoint) {}
  bool needs_savepoint() const override { return needs_savepoint_; }

 private:
  bool needs_savepoint_;
};

// Queues `job` at the shard's writer; a refused job answers at once
// (kOverloaded: the queue is full or the writer stopping).
inline void SubmitOrRefuse(Shard* shard, std::unique_ptr<WriteJob> job) {
  if (!shard->writer->Submit(std::move(job))) {
    job->Done(shard->writer->Refusal("the write queue of shard " + std::to_string(shard->index)));
  }
}

// A CallbackJob of `work` at the shard's writer. `needs_savepoint`: false
// only when the work writes with at most one statement (WriteJob says why).
template <typename Result>
void SubmitCallbackJob(Shard* shard, typename CallbackJob<Result>::Work work,
                       typename CallbackJob<Result>::Callback done, bool needs_savepoint = true) {
  SubmitOrRefuse(shard, std::make_unique<CallbackJob<Result>>(std::move(work), std::move(done),
                                                              needs_savepoint));
}

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_CALLBACK_JOB_H_
