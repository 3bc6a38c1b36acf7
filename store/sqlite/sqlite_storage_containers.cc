// SqliteStorage: the container operations (register, read, drain, remove)
// and finding a container's shard.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "store/container_results.h"
#include "store/list_page.h"
#include "store/sqlite/callback_job.h"
#include "store/sqlite/claim_selector.h"
#include "store/sqlite/lifecycle_sql.h"
#include "store/sqlite/list_sql.h"
#include "store/sqlite/rows.h"
#include "store/sqlite/sqlite_storage.h"

namespace store {
namespace {

// Waits for the registration's transactions, one a shard, and answers once
// with the sum of their counts, or the first failure.
struct PendingRegistration {
  base::Mutex mu;
  size_t left GUARDED_BY(mu) = 0;
  ContainerResult result GUARDED_BY(mu);
  ContainerCallback done;

  void Finish(ContainerResult r) {
    ContainerResult final_result;
    {
      base::MutexLock lock(&mu);
      if (r.outcome == Outcome::kOk) {
        result.count += r.count;
      } else if (result.outcome == Outcome::kOk) {
        result.outcome = r.outcome;
        result.message = r.message;
      }
      if (--left > 0) return;
      final_result = std::move(result);
    }
    done(std::move(final_result));
  }
};

// Inserts or updates `specs` (all of one shard), starting new rows' tokens
// above `floor` as well as above this file's own floor.
// `now`: the shard's (SqliteStorage::ShardNow).
Status Upsert(Db* db, const std::vector<ContainerSpec>& specs, int64_t floor, int64_t now) {
  for (const ContainerSpec& c : specs) {
    StatementRef up;
    RETURN_IF_ERROR(db->Cached(sql::kUpsertContainer, &up));
    up->Bind(1, c.id);
    up->Bind(2, c.region);
    up->Bind(3, c.pool);
    up->Bind(4, c.latency_ms);
    up->Bind(5, c.data);
    up->Bind(6, now);
    up->Bind(7, floor);
    up->Bind(8, c.slots);
    if (c.attributes) {
      up->Bind(9, *c.attributes);
    } else {
      up->BindNull(9);
    }
    RETURN_IF_ERROR(up->Run());
    // The selector's copy, whatever changed: attributes, region, pool or latency.
    for (const char* copy : {sql::kDropAttributes, sql::kCopyAttributes}) {
      StatementRef q;
      RETURN_IF_ERROR(db->Cached(copy, &q));
      q->Bind(1, c.id);
      RETURN_IF_ERROR(q->Run());
    }
  }
  return Status::Ok();
}

}  // namespace

Status SqliteStorage::FindShard(const std::string& id, bool cached, int* shard) {
  *shard = -1;
  if (cached) {
    *shard = shard_of_id_.Find(id);
    if (*shard >= 0) return Status::Ok();
  }
  for (Shard* s : shards_) {
    bool found = false;
    // A read that failed says nothing about the id: it is not "unknown".
    RETURN_IF_ERROR(
        s->reads->With([&](Db* db) { return AnyRow(db, sql::kContainerExists, &found, id); }));
    if (!found) continue;
    *shard = s->index;
    // Unknown ids are never cached: a container registered a moment later
    // must be found by its next heartbeat.
    shard_of_id_.Remember(id, s->index);
    return Status::Ok();
  }
  return Status::Ok();
}

Status SqliteStorage::HighestTokenFloor(int64_t* floor) {
  *floor = 0;
  for (Shard* shard : shards_) {
    RETURN_IF_ERROR(shard->reads->With([&](Db* db) {
      StatementRef q;
      RETURN_IF_ERROR(db->Cached(sql::kTokenFloor, &q));
      bool row = false;
      RETURN_IF_ERROR(q->Step(&row));
      if (row) *floor = std::max(*floor, q->ColumnInt64(0));
      return Status::Ok();
    }));
  }
  return Status::Ok();
}

void SqliteStorage::Register(std::vector<ContainerSpec> specs, ContainerCallback done) {
  int64_t floor = 0;  // the highest token floor of all shards (several shards only)
  if (map_.shards() > 1) {
    // A container lives in exactly one shard: an id already stored, or being
    // stored, in a region of another shard is refused, and so is one id given
    // with regions of two shards in this call.
    std::unordered_map<std::string, int> wanted;
    for (const ContainerSpec& spec : specs) {
      auto [it, fresh] = wanted.emplace(spec.id, map_.ShardOf(spec.region));
      if (!fresh && it->second != map_.ShardOf(spec.region)) {
        return done(Failed<ContainerResult>(
            Outcome::kConflict,
            "container " + spec.id + " is given twice, in regions of different shards"));
      }
    }
    // From here until every shard's write has ended, no other registration,
    // in this process or another, checks or writes: so none can put the same
    // new id into another shard meanwhile.
    Status s = registration_.Enter(program_);
    if (!s.ok()) return done(Failed<ContainerResult>(OutcomeOfError(s), s.ToString()));
    done = [this, done = std::move(done)](ContainerResult r) {
      registration_.Leave();
      done(std::move(r));
    };
    for (const auto& [id, shard] : wanted) {
      int found = -1;
      s = FindShard(id, /*cached=*/false, &found);
      if (!s.ok()) return done(Failed<ContainerResult>(OutcomeOfError(s), s.ToString()));
      if (found >= 0 && found != shard) {
        return done(Failed<ContainerResult>(
            Outcome::kConflict, "container " + id +
                                    " is registered in a region of another shard; "
                                    "delete it before moving it to another region"));
      }
    }
    // Read after the checks: an id deleted from another shard was deleted
    // before them, so its last token is in that shard's floor by now.
    s = HighestTokenFloor(&floor);
    if (!s.ok()) return done(Failed<ContainerResult>(OutcomeOfError(s), s.ToString()));
  }
  std::map<int, std::vector<ContainerSpec>> by_shard;
  for (ContainerSpec& spec : specs) by_shard[map_.ShardOf(spec.region)].push_back(std::move(spec));
  if (by_shard.empty()) return done(ContainerResult{Outcome::kOk, {}, 0, ""});
  // One transaction a shard; the reply waits for all of them.
  auto pending = std::make_shared<PendingRegistration>();
  {
    base::MutexLock lock(&pending->mu);  // no other thread has it yet; the analysis asks
    pending->left = by_shard.size();
    pending->result.outcome = Outcome::kOk;
  }
  pending->done = std::move(done);
  for (auto& [shard, list] : by_shard) {
    auto batch = std::make_shared<std::vector<ContainerSpec>>(std::move(list));
    const int index = shard;  // clang 14 cannot capture a structured binding
    SubmitCallbackJob<ContainerResult>(
        shards_[shard],
        [this, index, batch, floor](Db* db, ContainerResult* out) {
          RETURN_IF_ERROR(Upsert(db, *batch, floor, ShardNow(index)));
          out->outcome = Outcome::kOk;
          out->count = static_cast<int64_t>(batch->size());
          return Status::Ok();
        },
        [pending](ContainerResult r) { pending->Finish(std::move(r)); });
  }
}

ContainerResult SqliteStorage::GetContainer(std::string_view id) {
  const std::string key(id);
  std::optional<ContainerInfo> found;
  Status s;
  for (Shard* shard : shards_) {
    s = shard->reads->With(
        [&](Db* db) { return ReadOneRow(db, sql::kGetContainer, key, kContainerColumns, &found); });
    if (!s.ok() || found) break;
  }
  return AnswerContainerRead(key, s, std::move(found));
}

Status SqliteStorage::ListContainers(const ContainerFilter& filter, const std::string& after,
                                    int limit, std::vector<ContainerInfo>* page,
                                    std::string* next_after) {
  // As ListSessions: a bounded walk of each shard, merged.
  return ListOverShards(
      shards_, kContainerColumns, kContainerKeyColumn, limit, filter.page_budget_bytes,
      [&](Db* db, StatementRef* q) {
        RETURN_IF_ERROR(db->Cached(sql::kListContainers, q));
        (*q)->Bind(1, after);
        BindOrNull(&**q, 2, filter.region);
        BindOrNull(&**q, 3, filter.pool);
        BindOrNull(&**q, 4, filter.status);
        BindOrNull(&**q, 5, filter.attribute_key);
        (*q)->Bind(6, filter.attribute_value);
        return Status::Ok();
      },
      page, next_after);
}

void SqliteStorage::WriteContainer(const std::string& id, ContainerCallback done,
                                   std::function<Status(Db*, ContainerResult*)> work) {
  int shard = 0;
  if (map_.shards() > 1) {
    Status s = FindShard(id, /*cached=*/false, &shard);
    if (!s.ok()) return done(Failed<ContainerResult>(OutcomeOfError(s), s.ToString()));
    if (shard < 0) return done(NoContainer(id));
  }
  SubmitCallbackJob<ContainerResult>(shards_[shard], std::move(work), std::move(done),
                                     /*needs_savepoint=*/false);
}

void SqliteStorage::Drain(std::string id, ContainerCallback done) {
  ChangeDrain(std::move(id), sql::kDrain, std::move(done));
}

void SqliteStorage::Undrain(std::string id, ContainerCallback done) {
  ChangeDrain(std::move(id), sql::kUndrain, std::move(done));
}

void SqliteStorage::ChangeDrain(std::string id, const char* statement, ContainerCallback done) {
  WriteContainer(id, std::move(done), [id, statement](Db* db, ContainerResult* out) {
    {
      StatementRef change;
      RETURN_IF_ERROR(db->Cached(statement, &change));
      change->Bind(1, id);
      RETURN_IF_ERROR(change->Run());
    }
    RETURN_IF_ERROR(SyncAttributesOpen(db, id));
    std::optional<ContainerInfo> now;
    RETURN_IF_ERROR(ReadOneRow(db, sql::kGetContainer, id, kContainerColumns, &now));
    *out = AnswerContainerRead(id, Status::Ok(), std::move(now));
    return Status::Ok();
  });
}

void SqliteStorage::Remove(std::string id, ContainerCallback done) {
  WriteContainer(id, std::move(done), [id](Db* db, ContainerResult* out) {
    {
      StatementRef del;
      RETURN_IF_ERROR(db->Cached(sql::kRemoveUnpicked, &del));
      del->Bind(1, id);
      RETURN_IF_ERROR(del->Run());
    }
    const bool removed = db->Changes() == 1;
    bool exists = false;
    if (!removed) RETURN_IF_ERROR(AnyRow(db, sql::kContainerExists, &exists, id));
    *out = RemoveAnswer(id, removed, exists);
    return Status::Ok();
  });
}

}  // namespace store
