#ifndef EDGEALLOC_STORE_RESULT_JOB_BASE_H_
#define EDGEALLOC_STORE_RESULT_JOB_BASE_H_

#include <functional>
#include <utility>

#include "store/status.h"
#include "store/types.h"

namespace store {

// A write job (Job: an engine's WriteJob or PgJob, whose Apply takes a
// Conn*) whose work is a function that fills a Result (SessionResult or
// ContainerResult), handed to a callback once the outcome is durable; a
// storage error is answered as Failed<Result>(OutcomeOfError(...)). The
// engines' wrappers add what their writer asks of a job.
template <typename Job, typename Conn, typename Result>
class ResultJobBase : public Job {
 public:
  using Work = std::function<Status(Conn*, Result*)>;
  using Callback = std::function<void(Result)>;
  ResultJobBase(Work work, Callback done) : work_(std::move(work)), done_(std::move(done)) {}

  // Starts afresh each time: a group may run a job again (PgJob says when).
  Status Apply(Conn* conn) override {
    result_ = Result{};
    return work_(conn, &result_);
  }
  void Done(Status status) override {
    if (!status.ok()) return done_(Failed<Result>(OutcomeOfError(status), status.ToString()));
    done_(std::move(result_));
  }

 private:
  Work work_;
  Callback done_;
  Result result_;
};

}  // namespace store

#endif  // EDGEALLOC_STORE_RESULT_JOB_BASE_H_
