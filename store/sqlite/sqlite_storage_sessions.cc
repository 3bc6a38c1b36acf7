// SqliteStorage: the session operations (claim, release, renew, read).
#include <algorithm>
#include <cassert>
#include <memory>
#include <string>
#include <utility>

#include "base/clock.h"
#include "store/claim_regions.h"
#include "store/list_page.h"
#include "store/sqlite/callback_job.h"
#include "store/sqlite/history_sql.h"
#include "store/sqlite/lifecycle_sql.h"
#include "store/sqlite/list_sql.h"
#include "store/sqlite/claim_selector.h"
#include "store/sqlite/release.h"
#include "store/session_id.h"
#include "store/session_rules.h"
#include "store/sqlite/rows.h"
#include "store/sqlite/sqlite_storage.h"

namespace store {
namespace {

// The session as stored (*found) or, when it is not live, its history
// (*ended), if any.
Status ReadSessionOrEnd(Db* db, const std::string& session_id, std::optional<Session>* found,
                        std::optional<EndedSession>* ended) {
  RETURN_IF_ERROR(ReadOneRow(db, sql::kGetSession, session_id, kSessionColumns, found));
  if (*found) return Status::Ok();
  StatementRef q;
  RETURN_IF_ERROR(db->Cached(sql::kGetEndedSession, &q));
  q->Bind(1, session_id);
  bool row = false;
  RETURN_IF_ERROR(q->Step(&row));
  if (row) *ended = ReadEndedSessionRow(*q);
  return Status::Ok();
}

// After a compare-and-swap on (session_id, token) changed nothing: why not.
Status ExplainFailedCas(Db* db, const Caller& caller, const std::string& session_id,
                        int64_t token, bool release, int64_t now_ms, SessionResult* out) {
  std::optional<Session> found;
  std::optional<EndedSession> ended;
  RETURN_IF_ERROR(ReadSessionOrEnd(db, session_id, &found, &ended));
  const StoredSession stored = found ? StoredOf(*found) : StoredSession{};
  return store::ExplainFailedCas(caller, session_id, token, release, found ? &stored : nullptr,
                                 ended ? &*ended : nullptr, now_ms, out);
}

// The live session of the tenant's idempotency key, if any, into *found.
Status FindIdempotent(Db* db, const ClaimRequest& req, int64_t now_ms, SessionResult* found) {
  StatementRef q;
  RETURN_IF_ERROR(db->Cached(sql::kFindIdempotent, &q));
  q->Bind(1, req.caller.tenant);
  q->Bind(2, req.idempotency_key);
  q->Bind(3, now_ms);
  bool row = false;
  RETURN_IF_ERROR(q->Step(&row));
  if (row) {
    ReadSessionRow(*q, &found->session);
    found->outcome = Outcome::kReplayed;
  }
  return Status::Ok();
}

// The tenant's sessions in this file.
Status CountTenantSessions(Db* db, const std::string& tenant, int64_t* sessions) {
  *sessions = 0;
  StatementRef q;
  RETURN_IF_ERROR(db->Cached(sql::kCountTenantSessions, &q));
  q->Bind(1, tenant);
  bool row = false;
  RETURN_IF_ERROR(q->Step(&row));
  if (row) *sessions = q->ColumnInt64(0);
  return Status::Ok();
}

}  // namespace

// One claim request on its way through its regions, shard by shard.
struct SqliteStorage::ClaimAttempt {
  ClaimRequest req;
  std::vector<std::string> regions;  // the region, then the fallbacks
  SessionCallback done;
  bool selector_matched = false;  // in a shard tried before (TryNextShard)
};

// Runs the claim statement for regions[first, last) of one shard, in order:
// the first region with a fitting container wins.
class SqliteStorage::ClaimJob : public WriteJob {
  // This shard's statements of the claim (store/claim_regions.h), at `now`.
  struct Statements {
    ClaimJob* job;
    Db* db;
    int64_t now;
    Status FindIdempotent(SessionResult* found) {
      return store::FindIdempotent(db, job->attempt_->req, now, found);
    }
    Status ClaimIn(const std::string& region, bool* claimed, SessionResult* out) {
      return job->ClaimIn(db, region, now, claimed, out);
    }
    Status KeyHeld(bool* held) {
      const ClaimRequest& req = job->attempt_->req;
      return AnyRow(db, sql::kKeyHeld, held, req.caller.tenant, req.idempotency_key);
    }
    Status ForgetExpiredKey() { return job->ForgetExpiredKey(db, now); }
    Status AnySelectorMatch(const std::string& region, bool* any) {
      const ClaimRequest& r = job->attempt_->req;
      return store::AnySelectorMatch(db, region, r.pool, r.selector, any);
    }
    Status CountTenantSessions(int64_t* sessions) {
      return store::CountTenantSessions(db, job->attempt_->req.caller.tenant, sessions);
    }
  };

 public:
  ClaimJob(SqliteStorage* storage, std::shared_ptr<ClaimAttempt> attempt, size_t first,
           size_t last, std::string session_id, int64_t quota)
      : storage_(storage),
        attempt_(std::move(attempt)),
        first_(first),
        last_(last),
        session_id_(std::move(session_id)),
        quota_(quota) {}

  Status Apply(Db* db) override {
    // Its regions share one shard: on the writer thread, ShardNow matches its rows.
    const int shard = storage_->map_.ShardOf(attempt_->regions[first_]);
    Statements statements{this, db, storage_->ShardNow(shard)};
    return ClaimInRegions(statements, attempt_->req, attempt_->regions, first_, last_, quota_,
                          &result_);
  }

  // Without an idempotency key the job writes one claim at most: a claim
  // statement either changes one row or nothing, and a failing one undoes
  // itself; a session row not written after it fails the group (ClaimIn).
  // With a key, ForgetExpiredKey may write before the claim.
  bool needs_savepoint() const override { return !attempt_->req.idempotency_key.empty(); }

  void Done(Status status) override {
    if (!status.ok()) {
      attempt_->done(Failed<SessionResult>(OutcomeOfError(status), status.ToString()));
      return;
    }
    if (TryNextShard(&result_.outcome, last_ < attempt_->regions.size(),
                     &attempt_->selector_matched)) {
      storage_->RunClaim(std::move(attempt_), last_);  // the next shard's regions
      return;
    }
    attempt_->done(std::move(result_));
  }

 private:
  // The claim statement for one region (the placement's), then the session's
  // row: *claimed if it took a slot.
  Status ClaimIn(Db* db, const std::string& region, int64_t now, bool* claimed,
                 SessionResult* out) {
    const ClaimRequest& req = attempt_->req;
    const ClaimPolicy& policy = storage_->policy_;
    size_t driving = 0;
    Shard* shard = nullptr;  // a selector's only: its counts, and its second statement's count
    if (!req.selector.empty()) {
      shard = storage_->shards_[static_cast<size_t>(storage_->map_.ShardOf(region))];
      RETURN_IF_ERROR(
          shard->driving_counts.Choose(db, region, req.pool, req.selector, now, &driving));
    }
    auto bind = [&](Statement* claim) {
      claim->Bind(1, region);
      claim->Bind(2, req.pool);
      claim->Bind(3, now - policy.dead_after_ms);
      claim->Bind(4, static_cast<int64_t>(policy.candidates));
      claim->Bind(5, req.caller.tenant);
      BindOrNull(claim, 6, req.idempotency_key);
      claim->Bind(7, quota_);
    };
    bool rechecked = false;
    RETURN_IF_ERROR(
        RunClaimStatements(db, req, policy.placement, driving, bind, claimed, &rechecked));
    if (rechecked) ++shard->writer->mutable_stats().selector_claims_rechecked;
    Took& took = db->took();
    // Rows a selector's walk found open on a container that was not: made
    // right, so that no walk passes them again (a claim without a selector
    // leaves its container's rows open: store/sqlite/schema.cc, version 18).
    for (const std::string& id : took.passed) {
      if (Status s = SyncAttributesOpen(db, id); !s.ok()) return HalfWritten(s);
    }
    if (!*claimed) return Status::Ok();
    if (!took.any) {
      return HalfWritten(Status::Corruption("a claim took a slot and did not say which"));
    }
    StatementRef insert;
    RETURN_IF_ERROR(db->Cached(sql::kInsertSession, &insert));
    insert->Bind(1, session_id_);
    insert->Bind(2, took.container_id);
    insert->Bind(3, took.slot);
    insert->Bind(4, took.generation);
    insert->Bind(5, req.caller.tenant);
    BindOrNull(&*insert, 6, req.idempotency_key);
    insert->Bind(7, now + req.lease_ms);
    insert->Bind(8, now);
    BindOrNull(&*insert, 9, req.labels);
    if (Status s = insert->Run(); !s.ok()) {
      // The slot is taken and its session not written: fail the group, so
      // that neither is committed.
      return HalfWritten(Status::IOError("a claim took a slot but its session was not written: " +
                                         s.ToString()));
    }
    if (took.closed) {  // its last free slot: its attribute rows leave the selectors' walk
      StatementRef close;
      RETURN_IF_ERROR(db->Cached(sql::kCloseAttributes, &close));
      close->Bind(1, took.container_id);
      if (Status s = close->Run(); !s.ok()) return HalfWritten(s);
    }
    // The session as kGetSession would read it back (a claim's reply equals
    // a read of its session, every column of kSessionColumns:
    // tests/store/slots_test.cc), from what the claim took and wrote; the
    // read cost a claim two lookups.
    Session& session = out->session;
    session.session_id = session_id_;
    session.container_id = std::move(took.container_id);
    session.region = region;  // the candidates' region is the statement's
    session.pool = req.pool;
    session.token = took.generation;
    session.lease_expires_at_ms = now + req.lease_ms;
    session.data = std::move(took.data);
    session.labels = req.labels.empty() ? "{}" : req.labels;
    session.tenant = req.caller.tenant;
    session.slot = took.slot;
    out->outcome = Outcome::kOk;
    return Status::Ok();
  }

  Status ForgetExpiredKey(Db* db, int64_t now) {
    StatementRef forget;
    RETURN_IF_ERROR(db->Cached(sql::kForgetExpiredKey, &forget));
    forget->Bind(1, attempt_->req.caller.tenant);
    forget->Bind(2, attempt_->req.idempotency_key);
    forget->Bind(3, now);
    return forget->Run();
  }

  SqliteStorage* storage_;
  std::shared_ptr<ClaimAttempt> attempt_;
  size_t first_, last_;
  std::string session_id_;
  int64_t quota_;
  SessionResult result_;
};

void SqliteStorage::Claim(ClaimRequest req, SessionCallback done) {
  assert(req.lease_ms > 0);
  auto attempt = std::make_shared<ClaimAttempt>();
  attempt->regions.reserve(1 + req.fallback_regions.size());
  attempt->regions.push_back(req.region);
  for (auto& r : req.fallback_regions) attempt->regions.push_back(std::move(r));
  attempt->req = std::move(req);
  attempt->done = std::move(done);
  if (map_.shards() > 1 && !attempt->req.idempotency_key.empty()) {
    // With shards the key's session may live in another region's file: look
    // in every file first, from committed state. (Two concurrent duplicates
    // whose claims land in different shards are not caught: README says so.)
    SessionResult found;
    Status s = FindIdempotentSession(attempt->req, &found);
    if (!s.ok()) {
      // Not knowing whether the key has a session is no licence to make a
      // second one: storage trouble is answered as such.
      return attempt->done(Failed<SessionResult>(OutcomeOfError(s), s.ToString()));
    }
    if (found.outcome == Outcome::kReplayed) return attempt->done(std::move(found));
  }
  RunClaim(std::move(attempt), 0);
}

Status SqliteStorage::FindIdempotentSession(const ClaimRequest& req, SessionResult* found) {
  for (Shard* shard : shards_) {
    RETURN_IF_ERROR(ReadAtShardNow(
        shard->index, [&](Db* db, int64_t now) { return FindIdempotent(db, req, now, found); }));
    if (found->outcome == Outcome::kReplayed) break;
  }
  return Status::Ok();
}

Status SqliteStorage::SessionsElsewhere(const std::string& tenant, int shard, int64_t* count) {
  *count = 0;
  for (Shard* other : shards_) {
    if (other->index == shard) continue;
    int64_t sessions = 0;
    RETURN_IF_ERROR(other->reads->With(
        [&](Db* db) { return store::CountTenantSessions(db, tenant, &sessions); }));
    *count += sessions;
  }
  return Status::Ok();
}

void SqliteStorage::RunClaim(std::shared_ptr<ClaimAttempt> attempt, size_t first) {
  // Consecutive regions of the same shard are tried in one job, in order.
  const int shard = map_.ShardOf(attempt->regions[first]);
  size_t last = first + 1;
  while (last < attempt->regions.size() && map_.ShardOf(attempt->regions[last]) == shard) ++last;

  int64_t quota = TenantQuota(policy_, attempt->req.caller);
  if (quota != kUnlimited && map_.shards() > 1) {
    // The statement counts this shard's sessions; the other shards' share is
    // read here, from committed state, and taken off the quota. An unread
    // share would let the tenant past its quota: that fails the claim.
    int64_t elsewhere = 0;
    Status s = SessionsElsewhere(attempt->req.caller.tenant, shard, &elsewhere);
    if (!s.ok()) return attempt->done(Failed<SessionResult>(OutcomeOfError(s), s.ToString()));
    quota = std::max<int64_t>(quota - elsewhere, 0);
  }
  std::string session_id;
  if (Status s = NewSessionId(shard, &session_id); !s.ok()) {
    return attempt->done(
        Failed<SessionResult>(Outcome::kError, "no session id: " + s.ToString() + "; retry"));
  }
  SubmitOrRefuse(shards_[shard], std::make_unique<ClaimJob>(this, std::move(attempt), first, last,
                                                            std::move(session_id), quota));
}

void SqliteStorage::Release(const Caller& caller, std::string session_id, int64_t token,
                            SessionCallback done) {
  RunSessionCas(CasKind::kRelease, caller, std::move(session_id), token, 0, std::move(done));
}

void SqliteStorage::Renew(const Caller& caller, std::string session_id, int64_t token,
                          int64_t lease_ms, bool shorten, SessionCallback done) {
  assert(lease_ms > 0);
  RunSessionCas(shorten ? CasKind::kRenewShorten : CasKind::kRenew, caller, std::move(session_id),
                token, lease_ms, std::move(done));
}

void SqliteStorage::RunSessionCas(CasKind kind, const Caller& caller, std::string session_id,
                                  int64_t token, int64_t lease_ms, SessionCallback done) {
  const int shard = ShardOfSessionId(session_id, map_.shards());
  if (shard < 0) return done(Failed<SessionResult>(Outcome::kNotFound, "no session " + session_id));
  // One UPDATE (a release's history row: release.h), ExplainFailedCas only
  // reads: no savepoint needed.
  SubmitCallbackJob<SessionResult>(
      shards_[shard],
      [this, shard, kind, caller, session_id, token, lease_ms](Db* db, SessionResult* out) {
        const int64_t now = ShardNow(shard);
        bool changed = false;
        if (kind == CasKind::kRelease) {
          RETURN_IF_ERROR(ReleaseInTransaction(db, caller, session_id, token, now, &changed));
        } else {
          StatementRef cas;
          RETURN_IF_ERROR(db->Cached(sql::kRenew, &cas));
          BindSessionCas(&*cas, session_id, token, caller, now);
          cas->Bind(5, now + lease_ms);
          cas->Bind(6, int64_t{kind == CasKind::kRenewShorten ? 1 : 0});
          RETURN_IF_ERROR(cas->Run());
          changed = db->Changes() == 1;
          if (changed) {
            std::optional<Session> renewed;
            RETURN_IF_ERROR(ReadOneRow(db, sql::kGetSession, session_id, kSessionColumns, &renewed));
            if (renewed) out->session = std::move(*renewed);
          }
        }
        if (changed) {
          out->outcome = Outcome::kOk;
          out->session.session_id = session_id;
          return Status::Ok();
        }
        return ExplainFailedCas(db, caller, session_id, token, kind == CasKind::kRelease, now,
                                out);
      },
      std::move(done), /*needs_savepoint=*/false);
}

SessionResult SqliteStorage::GetSession(const Caller& caller, std::string_view session_id) {
  const std::string id(session_id);
  const int shard = ShardOfSessionId(id, map_.shards());
  std::optional<Session> found;
  std::optional<EndedSession> ended;
  Status s;
  int64_t now = base::NowMs();
  if (shard >= 0) {
    s = ReadAtShardNow(shard, [&](Db* db, int64_t shard_now) {
      found.reset();
      ended.reset();
      now = shard_now;
      return ReadSessionOrEnd(db, id, &found, &ended);
    });
  }
  return AnswerSessionRead(caller, id, s, std::move(found), std::move(ended), now);
}

}  // namespace store
