#include "allocator/registry.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <unordered_map>

#include "allocator/sql.h"
#include "base/clock.h"

namespace allocator {
namespace {

using store::Db;
using store::Status;
using store::StatementRef;

ContainerResult Fail(Outcome outcome, std::string message) {
  ContainerResult r;
  r.outcome = outcome;
  r.message = std::move(message);
  return r;
}

Outcome OutcomeOfStorage(const Status& s) {
  return s.IsBusy() ? Outcome::kOverloaded : Outcome::kError;
}

// A job whose work is a function and whose outcome goes to a callback.
class ContainerJob : public store::WriteJob {
 public:
  using Work = std::function<Status(Db*, ContainerResult*)>;
  ContainerJob(Work work, ContainerCallback done) : work_(std::move(work)), done_(std::move(done)) {}
  Status Apply(Db* db) override { return work_(db, &result_); }
  void Done(Status status) override {
    if (!status.ok()) {
      done_(Fail(OutcomeOfStorage(status), status.ToString()));
      return;
    }
    done_(std::move(result_));
  }

 private:
  Work work_;
  ContainerCallback done_;
  ContainerResult result_;
};

// Submits a ContainerJob; a refused job answers kOverloaded at once.
void SubmitContainerJob(store::Shard* shard, ContainerJob::Work work, ContainerCallback done) {
  std::unique_ptr<store::WriteJob> job =
      std::make_unique<ContainerJob>(std::move(work), std::move(done));
  if (!shard->writer->Submit(std::move(job))) {
    job->Done(Status::Busy("the write queue is full; retry shortly"));
  }
}

}  // namespace

Registry::Registry(std::vector<store::Shard*> shards, store::ShardMap map)
    : shards_(std::move(shards)), map_(std::move(map)) {}

Status Registry::FindShard(std::string_view id, int* found) {
  *found = -1;
  const std::string key(id);
  for (store::Shard* shard : shards_) {
    bool row = false;
    Status s = shard->reads->With([&](Db* db) {
      Status st;
      StatementRef q;
      RETURN_IF_ERROR(db->Cached(sql::kContainerExists, &q));
      q->Bind(1, key);
      return q->Step(&row);
    });
    // A read that failed says nothing about the id: it is not "unknown".
    if (!s.ok()) return s;
    if (row) {
      *found = shard->index;
      return Status::Ok();
    }
  }
  return Status::Ok();
}

Status Registry::HighestTokenFloor(int64_t* floor) {
  *floor = 0;
  for (store::Shard* shard : shards_) {
    Status s = shard->reads->With([&](Db* db) {
      Status st;
      StatementRef q;
      RETURN_IF_ERROR(db->Cached(sql::kTokenFloor, &q));
      bool row = false;
      st = q->Step(&row);
      if (st.ok() && row) *floor = std::max(*floor, q->ColumnInt64(0));
      return st;
    });
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

void Registry::Register(std::vector<ContainerSpec> specs, ContainerCallback done) {
  std::map<int, std::vector<ContainerSpec>> by_shard;
  int64_t floor = 0;  // the highest token floor of all shards (several shards only)
  if (map_.shards() > 1) {
    // A container lives in exactly one shard: an id already stored, or being
    // stored, in a region of another shard is refused, and so is one id given
    // with regions of two shards in this call.
    std::unordered_map<std::string, int> wanted;
    for (const ContainerSpec& spec : specs) {
      const int shard = map_.ShardOf(spec.region);
      auto [it, fresh] = wanted.emplace(spec.id, shard);
      if (!fresh && it->second != shard) {
        done(Fail(Outcome::kConflict, "container " + spec.id +
                                          " is given twice, in regions of different shards"));
        return;
      }
    }
    // From here until every shard's write has ended, no other registration,
    // in this process or another, checks or writes: so none can put the same
    // new id into another shard meanwhile.
    Status s = EnterRegistration();
    if (!s.ok()) {
      done(Fail(OutcomeOfStorage(s), s.ToString()));
      return;
    }
    done = [this, done = std::move(done)](ContainerResult r) {
      LeaveRegistration();
      done(std::move(r));
    };
    for (const auto& [id, shard] : wanted) {
      int found = -1;
      s = FindShard(id, &found);
      if (!s.ok()) {
        done(Fail(OutcomeOfStorage(s), s.ToString()));
        return;
      }
      if (found >= 0 && found != shard) {
        done(Fail(Outcome::kConflict,
                  "container " + id + " is registered in a region of another shard; "
                                      "delete it before moving it to another region"));
        return;
      }
    }
    // Read after the checks: an id deleted from another shard was deleted
    // before them, so its last token is in that shard's floor by now.
    s = HighestTokenFloor(&floor);
    if (!s.ok()) {
      done(Fail(OutcomeOfStorage(s), s.ToString()));
      return;
    }
  }
  for (ContainerSpec& spec : specs) by_shard[map_.ShardOf(spec.region)].push_back(std::move(spec));
  if (by_shard.empty()) {
    ContainerResult r;
    r.outcome = Outcome::kOk;
    done(std::move(r));
    return;
  }
  // One transaction a shard; the reply waits for all of them.
  struct Pending {
    base::Mutex mu;
    size_t left GUARDED_BY(mu) = 0;
    ContainerResult result GUARDED_BY(mu);
    ContainerCallback done;
  };
  auto pending = std::make_shared<Pending>();
  {
    base::MutexLock lock(&pending->mu);  // no other thread has it yet; the analysis asks
    pending->left = by_shard.size();
    pending->result.outcome = Outcome::kOk;
  }
  pending->done = std::move(done);
  for (auto& [shard, list] : by_shard) {
    auto batch = std::make_shared<std::vector<ContainerSpec>>(std::move(list));
    SubmitContainerJob(
        shards_[shard],
        [batch, floor](Db* db, ContainerResult* out) {
          const int64_t now = base::NowMs();
          for (const ContainerSpec& c : *batch) {
            Status s;
            StatementRef up;
            RETURN_IF_ERROR(db->Cached(sql::kUpsertContainer, &up));
            up->Bind(1, c.id);
            up->Bind(2, c.region);
            up->Bind(3, c.pool);
            up->Bind(4, c.latency_ms);
            up->Bind(5, c.data);
            up->Bind(6, now);
            up->Bind(7, floor);
            s = up->Run();
            if (!s.ok()) return s;
          }
          out->outcome = Outcome::kOk;
          out->count = static_cast<int64_t>(batch->size());
          return Status::Ok();
        },
        [pending](ContainerResult r) {
          ContainerResult final_result;
          {
            base::MutexLock lock(&pending->mu);
            if (r.outcome == Outcome::kOk) {
              pending->result.count += r.count;
            } else if (pending->result.outcome == Outcome::kOk) {
              pending->result.outcome = r.outcome;
              pending->result.message = r.message;
            }
            if (--pending->left > 0) return;
            final_result = std::move(pending->result);
          }
          pending->done(std::move(final_result));
        });
  }
}

Status Registry::EnterRegistration() {
  {
    base::MutexLock lock(&registration_mu_);
    while (registering_) registration_cv_.Wait(&registration_mu_);
    registering_ = true;
  }
  Status s = register_lock_ != nullptr
                 ? Status::Ok()
                 : store::WriteLock::Open(map_.base_path() + ".register.lock", program_,
                                          &register_lock_);
  if (s.ok()) s = register_lock_->Acquire(kRegistrationLockTimeoutMs);
  if (!s.ok()) LeaveRegistration();
  return s;
}

void Registry::LeaveRegistration() {
  if (register_lock_ != nullptr && register_lock_->held()) register_lock_->Release();
  {
    base::MutexLock lock(&registration_mu_);
    registering_ = false;
  }
  registration_cv_.Signal();
}

ContainerResult Registry::Get(std::string_view id) {
  const std::string key(id);
  for (store::Shard* shard : shards_) {
    ContainerResult result = Fail(Outcome::kNotFound, "no container " + key);
    Status s = shard->reads->With([&](Db* db) {
      Status st;
      StatementRef q;
      RETURN_IF_ERROR(db->Cached(sql::kGetContainer, &q));
      q->Bind(1, key);
      bool row = false;
      st = q->Step(&row);
      if (!st.ok() || !row) return st;
      ContainerInfo& c = result.container;
      c.id = q->ColumnString(0);
      c.region = q->ColumnString(1);
      c.pool = q->ColumnString(2);
      c.status = q->ColumnString(3);
      c.latency_ms = q->ColumnInt64(4);
      c.last_heartbeat_ms = q->ColumnInt64(5);
      c.generation = q->ColumnInt64(6);
      c.drain_requested = q->ColumnInt64(7) != 0;
      c.data = q->ColumnString(8);
      if (!q->ColumnIsNull(9)) c.session_id = q->ColumnString(9);
      result.outcome = Outcome::kOk;
      result.message.clear();
      return st;
    });
    if (!s.ok()) return Fail(OutcomeOfStorage(s), s.ToString());
    if (result.outcome == Outcome::kOk) return result;
  }
  return Fail(Outcome::kNotFound, "no container " + key);
}

store::Shard* Registry::ShardOrAnswer(const std::string& id, ContainerCallback* done) {
  if (map_.shards() == 1) return shards_[0];
  int shard = -1;
  Status s = FindShard(id, &shard);
  if (!s.ok()) {
    (*done)(Fail(OutcomeOfStorage(s), s.ToString()));
    return nullptr;
  }
  if (shard >= 0) return shards_[shard];
  (*done)(Fail(Outcome::kNotFound, "no container " + id));
  return nullptr;
}

void Registry::Drain(std::string id, ContainerCallback done) {
  store::Shard* shard = ShardOrAnswer(id, &done);
  if (shard == nullptr) return;
  SubmitContainerJob(
      shard,
      [id](Db* db, ContainerResult* out) {
        Status s;
        StatementRef q;
        RETURN_IF_ERROR(db->Cached(sql::kDrain, &q));
        q->Bind(1, id);
        bool row = false;
        s = q->Step(&row);
        if (!s.ok()) return s;
        if (!row) {
          *out = Fail(Outcome::kNotFound, "no container " + id);
          return Status::Ok();
        }
        out->outcome = Outcome::kOk;
        out->container.id = id;
        out->container.status = q->ColumnString(0);
        out->container.drain_requested = out->container.status == "picked";
        return q->Run();
      },
      std::move(done));
}

void Registry::Remove(std::string id, ContainerCallback done) {
  store::Shard* shard = ShardOrAnswer(id, &done);
  if (shard == nullptr) return;
  SubmitContainerJob(
      shard,
      [id](Db* db, ContainerResult* out) {
        Status s;
        {
          StatementRef del;
          RETURN_IF_ERROR(db->Cached(sql::kRemoveUnpicked, &del));
          del->Bind(1, id);
          s = del->Run();
          if (!s.ok()) return s;
        }
        if (db->Changes() == 1) {
          out->outcome = Outcome::kOk;
          out->count = 1;
          return Status::Ok();
        }
        StatementRef q;
        RETURN_IF_ERROR(db->Cached(sql::kContainerExists, &q));
        q->Bind(1, id);
        bool row = false;
        s = q->Step(&row);
        if (!s.ok()) return s;
        *out = row ? Fail(Outcome::kConflict, "container " + id + " is picked; release it first")
                   : Fail(Outcome::kNotFound, "no container " + id);
        return Status::Ok();
      },
      std::move(done));
}

}  // namespace allocator
