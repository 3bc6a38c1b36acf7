#ifndef EDGEALLOC_STORE_SQLITE_CALLBACK_JOB_H_
#define EDGEALLOC_STORE_SQLITE_CALLBACK_JOB_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "store/sqlite/shard.h"
#include "store/sqlite/writer.h"
#include "store/types.h"

namespace store {

// A WriteJob whose work is a function that fills a Result (SessionResult or
// ContainerResult), handed to a callback once the outcome is durable; a
// storage error is answered as Failed<Result>(OutcomeOfError(...)).
template <typename Result>
class CallbackJob : public WriteJob {
 public:
  using Work = std::function<Status(Db*, Result*)>;
  using Callback = std::function<void(Result)>;
  CallbackJob(Work work, Callback done, bool needs_savepoint)
      : work_(std::move(work)), done_(std::move(done)), needs_savepoint_(needs_savepoint) {}

  Status Apply(Db* db) override { return work_(db, &result_); }
  void Done(Status status) override {
    if (!status.ok()) {
      done_(Failed<Result>(OutcomeOfError(status), status.ToString()));
      return;
    }
    done_(std::move(result_));
  }
  bool needs_savepoint() const override { return needs_savepoint_; }

 private:
  Work work_;
  Callback done_;
  bool needs_savepoint_;
  Result result_;
};

// Queues `job` at the shard's writer; a refused job answers at once
// (kOverloaded: the queue is full or the writer stopping).
inline void SubmitOrRefuse(Shard* shard, std::unique_ptr<WriteJob> job) {
  if (!shard->writer->Submit(std::move(job))) {
    job->Done(Status::Busy("the write queue of shard " + std::to_string(shard->index) +
                           " is full; retry shortly"));
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
