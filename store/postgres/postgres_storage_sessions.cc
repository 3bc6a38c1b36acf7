// PostgresStorage: the session operations (claim, release, renew, read).
#include <cassert>
#include <memory>
#include <string>
#include <utility>

#include "base/clock.h"
#include "store/claim_regions.h"
#include "store/list_page.h"
#include "store/postgres/postgres_storage.h"
#include "store/postgres/rows.h"
#include "store/postgres/session_sql.h"
#include "store/selector.h"
#include "store/session_id.h"
#include "store/session_rules.h"

namespace store {
namespace {

// The advisory lock of a tenant's idempotency key, kept apart from the
// tenant's own lock (its name) by a prefix; should two keys' hashes
// collide, their claims only take turns.
std::string IdempotencyLockKey(const std::string& tenant, const std::string& key) {
  return "\x1fidempotency\x1f" + tenant + "\x1f" + key;
}

PgStatement FindIdempotentStatement(const ClaimRequest& req) {
  return {pgsql::kFindIdempotent, {P(req.caller.tenant), P(req.idempotency_key)}};
}

// The live session of the tenant's idempotency key, if any, into *found.
Status FindIdempotent(PgConn* conn, const ClaimRequest& req, SessionResult* found) {
  PgResult r;
  const PgStatement find = FindIdempotentStatement(req);
  RETURN_IF_ERROR(conn->Run(find.sql, find.params, &r));
  if (r.rows() > 0) {
    ReadSessionRow(r, 0, &found->session);
    found->outcome = Outcome::kReplayed;
  }
  return Status::Ok();
}

// The placement a claim runs with: its own, else the server's.
Placement PlacementOf(const ClaimRequest& req, const ClaimPolicy& policy) {
  return req.placement == Placement::kDefault ? policy.placement : req.placement;
}

// The advisory lock of a pool's packed and distributed claims, kept apart
// from tenants' locks by a prefix: they take turns, each seeing the pool as
// the one before it left it.
std::string PoolLockKey(const std::string& region, const std::string& pool) {
  return "\x1fpool\x1f" + region + "\x1f" + pool;
}

// Durations only: the statement takes its now from the database.
// The placement's statement; with a selector, its selected one and $11 to $13
// (selector_sql.h).
PgStatement ClaimStatement(const ClaimRequest& req, const std::string& region,
                           const ClaimPolicy& policy, const std::string& session_id) {
  // Rows: fittest, packed, distributed; columns: no selector, a driving term
  // of one value, of several (as store/sqlite/claim_selector.cc).
  static constexpr const char* kStatements[3][3] = {
      {pgsql::kClaimFittest, pgsql::kClaimSelectedOneValue, pgsql::kClaimSelectedValues},
      {pgsql::kClaimPacked, pgsql::kClaimPackedSelectedOneValue,
       pgsql::kClaimPackedSelectedValues},
      {pgsql::kClaimDistributed, pgsql::kClaimDistributedSelectedOneValue,
       pgsql::kClaimDistributedSelectedValues},
  };
  const bool selected = !req.selector.empty();
  const ClaimForm form = ClaimFormOf(req, policy.placement);
  const char* sql = kStatements[form.placement][form.candidates];
  PgStatement claim{sql,
                    {P(region), P(req.pool), P(policy.dead_after_ms),
                     P(int64_t{policy.candidates}), P(session_id), P(req.caller.tenant),
                     req.idempotency_key.empty() ? Null() : P(req.idempotency_key),
                     P(req.lease_ms), P(policy.max_sessions_per_tenant),
                     req.labels.empty() ? Null() : P(req.labels)}};
  if (selected) {
    const SelectorTerm& driving = req.selector[DrivingTerm(req.selector)];
    claim.params.push_back(P(driving.key));
    claim.params.push_back(TextArrayParam(driving.values));
    claim.params.push_back(P(SelectorJson(req.selector)));
  }
  return claim;
}

// What a claim runs first: the key's lookup, or the claim in its region.
PgStatement FirstOfClaim(const ClaimRequest& req, const ClaimPolicy& policy,
                         const std::string& session_id) {
  return req.idempotency_key.empty() ? ClaimStatement(req, req.region, policy, session_id)
                                     : FindIdempotentStatement(req);
}

// The claim's statements on PostgreSQL (store/claim_regions.h). Under a
// quota the tenant's advisory lock is held (the writer took it at the
// group's start: PgJob::AddLockKeys), so concurrent claims of one tenant, on
// any node, count its sessions one after another and no two pass the quota
// together.
struct ClaimStatements {
  PgConn* conn;
  const ClaimRequest& req;
  const ClaimPolicy& policy;
  const std::string& session_id;

  Status FindIdempotent(SessionResult* found) {
    return store::FindIdempotent(conn, req, found);
  }
  // With an idempotency key, under a savepoint of its own, so that a
  // refused key undoes only it.
  Status ClaimIn(const std::string& region, bool* claimed, SessionResult* out) {
    // Only a claim with a key can be refused by the unique index and must be
    // undone alone to try again; any other failure fails the job (whose
    // savepoint the writer rolls back), so it saves the two round trips.
    const bool keyed = !req.idempotency_key.empty();
    if (keyed) RETURN_IF_ERROR(conn->Exec("SAVEPOINT claim"));
    PgResult r;
    const PgStatement claim = ClaimStatement(req, region, policy, session_id);
    Status s = conn->Run(claim.sql, claim.params, &r);
    if (keyed) {
      RETURN_IF_ERROR(
          conn->Exec(s.ok() ? "RELEASE SAVEPOINT claim" : "ROLLBACK TO SAVEPOINT claim"));
    }
    RETURN_IF_ERROR(s);
    *claimed = r.rows() > 0;
    if (*claimed) {
      ReadSessionRow(r, 0, &out->session);
      out->outcome = Outcome::kOk;
    }
    return Status::Ok();
  }
  Status KeyHeld(bool* held) {
    PgResult r;
    RETURN_IF_ERROR(conn->Run(pgsql::kKeyHeld, {P(req.caller.tenant), P(req.idempotency_key)}, &r));
    *held = r.rows() > 0;
    return Status::Ok();
  }
  Status ForgetExpiredKey() {
    return conn->Run(pgsql::kForgetExpiredKey, {P(req.caller.tenant), P(req.idempotency_key)});
  }
  Status AnySelectorMatch(const std::string& region, bool* any) {
    const SelectorTerm& driving = req.selector[DrivingTerm(req.selector)];
    PgResult r;
    RETURN_IF_ERROR(conn->Run(pgsql::kAnySelectorMatch,
                              {P(region), P(req.pool), P(driving.key),
                               TextArrayParam(driving.values), P(SelectorJson(req.selector))},
                              &r));
    *any = r.rows() > 0;
    return Status::Ok();
  }
  Status CountTenantSessions(int64_t* sessions) {
    PgResult count;
    RETURN_IF_ERROR(conn->Run(pgsql::kCountTenantSessions, {P(req.caller.tenant)}, &count));
    *sessions = count.rows() > 0 ? count.Int64(0, 0) : 0;
    return Status::Ok();
  }
};

// A history row (kGetEndedSession, kListEndedSessions): the session, its
// end reason and end time.
EndedSession ReadEndedSession(const PgResult& r, int row) {
  EndedSession e;
  ReadSessionRow(r, row, &e.session);
  e.end = {std::string(r.Text(row, kSessionColumnCount)), r.Int64(row, kSessionColumnCount + 1)};
  return e;
}

// The session as stored (*found, and the database's now that judges its
// lease) or, when it is not live, its history (*ended), if any. With
// `steps`, the now is taken as a reading of the database's clock, less a
// step in it no one has shifted the rows for yet.
Status ReadSessionOrEnd(PgConn* conn, const std::string& id, std::optional<Session>* found,
                        int64_t* now, std::optional<EndedSession>* ended,
                        const DbClockSteps* steps = nullptr) {
  PgResult r;
  DbClockReading reading;
  reading.monotonic_before_ms = base::SteadyNowMs();
  RETURN_IF_ERROR(conn->Run(pgsql::kGetSession, {P(id)}, &r));
  reading.monotonic_after_ms = base::SteadyNowMs();
  if (r.rows() > 0) {
    ReadSessionRow(r, 0, &found->emplace());
    *now = r.Int64(0, kSessionColumnCount);
    if (steps != nullptr) {
      reading.db_ms = *now;
      reading.fleet_shifted_ms = r.Int64(0, kSessionColumnCount + 1);
      *now -= steps->Unshifted(reading);
    }
    return Status::Ok();
  }
  RETURN_IF_ERROR(conn->Run(pgsql::kGetEndedSession, {P(id)}, &r));
  if (r.rows() > 0) *ended = ReadEndedSession(r, 0);
  return Status::Ok();
}

// After a compare-and-swap on (session_id, token) changed nothing: why not,
// judged on the database's clock.
Status ExplainFailedCas(PgConn* conn, const Caller& caller, const std::string& id, int64_t token,
                        bool release, SessionResult* out) {
  std::optional<Session> found;
  std::optional<EndedSession> ended;
  int64_t now = 0;  // no row: the lease need not be judged
  RETURN_IF_ERROR(ReadSessionOrEnd(conn, id, &found, &now, &ended));
  const StoredSession stored = found ? StoredOf(*found) : StoredSession{};
  return store::ExplainFailedCas(caller, id, token, release, found ? &stored : nullptr,
                                 ended ? &*ended : nullptr, now, out);
}

}  // namespace

void PostgresStorage::Claim(ClaimRequest req, SessionCallback done) {
  assert(req.lease_ms > 0);
  std::string session_id;
  if (Status s = NewSessionId(0, &session_id); !s.ok()) {
    return done(Failed<SessionResult>(Outcome::kError, "no session id: " + s.ToString() + "; retry"));
  }
  auto request = std::make_shared<ClaimRequest>(std::move(req));
  // The tenant's own quota (its keys-file max_sessions) or the server's.
  ClaimPolicy policy = policy_;
  policy.max_sessions_per_tenant = TenantQuota(policy_, request->caller);
  // Taken by the writer before the group's jobs, with every other lock of
  // the group, in one order (PgJob::AddLockKeys): the tenant's quota lock,
  // and the idempotency key's. Without the key's, two claims of one key on
  // two nodes met on the unique index midway through their groups, each
  // holding what the group had locked so far: two groups each with two
  // keys, in opposite orders, waited on each other in a cycle.
  std::vector<std::string> lock_keys;
  if (policy.max_sessions_per_tenant != kUnlimited) lock_keys.push_back(request->caller.tenant);
  if (!request->idempotency_key.empty()) {
    lock_keys.push_back(IdempotencyLockKey(request->caller.tenant, request->idempotency_key));
  }
  // And, for packed or distributed, each pool it may claim in.
  if (PlacementOf(*request, policy) != Placement::kFittest) {
    lock_keys.push_back(PoolLockKey(request->region, request->pool));
    for (const std::string& region : request->fallback_regions) {
      lock_keys.push_back(PoolLockKey(region, request->pool));
    }
  }
  // No time is taken here: the statements read the database's clock when
  // they run (lifecycle_sql.h), however long the claim waited in the queue.
  PgStatement first = FirstOfClaim(*request, policy, session_id);
  Submit<SessionResult>(
      [request, session_id, policy](PgConn* conn, SessionResult* out) {
        std::vector<std::string> regions{request->region};
        regions.insert(regions.end(), request->fallback_regions.begin(),
                       request->fallback_regions.end());
        ClaimStatements statements{conn, *request, policy, session_id};
        return ClaimInRegions(statements, *request, regions, 0, regions.size(),
                              policy.max_sessions_per_tenant, out);
      },
      std::move(done), std::move(lock_keys), std::move(first));
}

void PostgresStorage::Release(const Caller& caller, std::string session_id, int64_t token,
                              SessionCallback done) {
  PgStatement release{pgsql::kRelease,
                      {P(session_id), P(token), caller.admin ? Null() : P(caller.tenant),
                       P(caller.abandoning ? "true" : "false"), P(caller.tenant)}};
  Submit<SessionResult>(
      [caller, session_id, token, release](PgConn* conn, SessionResult* out) {
        PgResult r;
        RETURN_IF_ERROR(conn->Run(release.sql, release.params, &r));
        if (r.changed() == 1) {
          out->outcome = Outcome::kOk;
          out->session.session_id = session_id;
          return Status::Ok();
        }
        return ExplainFailedCas(conn, caller, session_id, token, /*release=*/true, out);
      },
      std::move(done), {}, release, PgRowLocks{{}, {session_id}});
}

void PostgresStorage::Renew(const Caller& caller, std::string session_id, int64_t token,
                            int64_t lease_ms, bool shorten, SessionCallback done) {
  assert(lease_ms > 0);
  PgStatement renew{pgsql::kRenew,
                    {P(session_id), P(token), caller.admin ? Null() : P(caller.tenant),
                     P(lease_ms), P(int64_t{shorten ? 1 : 0})}};
  Submit<SessionResult>(
      [caller, session_id, token, renew](PgConn* conn, SessionResult* out) {
        PgResult r;
        RETURN_IF_ERROR(conn->Run(renew.sql, renew.params, &r));
        if (r.rows() == 1) {
          ReadSessionRow(r, 0, &out->session);
          out->outcome = Outcome::kOk;
          return Status::Ok();
        }
        return ExplainFailedCas(conn, caller, session_id, token, /*release=*/false, out);
      },
      std::move(done), {}, renew, PgRowLocks{{}, {session_id}});
}

SessionResult PostgresStorage::GetSession(const Caller& caller, std::string_view session_id) {
  const std::string id(session_id);
  std::optional<Session> found;
  std::optional<EndedSession> ended;
  int64_t now = 0;
  if (ShardOfSessionId(id, 1) < 0) {
    return AnswerSessionRead(caller, id, Status::Ok(), found, ended, now);
  }
  // The lease is judged on the database's clock.
  Status s = WithReader([&](PgConn* conn) {
    return ReadSessionOrEnd(conn, id, &found, &now, &ended, clock_steps_.get());
  });
  return AnswerSessionRead(caller, id, s, std::move(found), std::move(ended), now);
}

Status PostgresStorage::CountTenantSessions(const std::string& tenant, int64_t* sessions) {
  *sessions = 0;
  return WithReader([&](PgConn* conn) {
    PgResult r;
    RETURN_IF_ERROR(conn->Run(pgsql::kCountTenantSessions, {P(tenant)}, &r));
    if (r.rows() > 0) *sessions = r.Int64(0, 0);
    return Status::Ok();
  });
}

Status PostgresStorage::ListSessions(const SessionFilter& filter, const std::string& after,
                                    int limit, std::vector<Session>* page,
                                    std::string* next_after) {
  const bool one_tenant = !filter.tenant.empty();
  return ListPage(
      limit, filter.page_budget_bytes, KeyOrder::kAscending,
      [&](PgConn* conn, const PageBounds& bounds, PgResult* r) {
        std::vector<PgParam> params =
            WithWalkParams({P(after), OrNull(filter.region), OrNull(filter.pool),
                            OrNull(filter.label_key), P(filter.label_value)},
                           bounds);
        if (one_tenant) params.push_back(P(filter.tenant));
        return conn->Run(
            one_tenant ? pgsql::kListTenantSessions.c_str() : pgsql::kListSessions.c_str(),
            params, r);
      },
      [](const PgResult& r) { return ListedPage(r, kSessionColumns); }, page, next_after);
}

Status PostgresStorage::ListEndedSessions(const SessionFilter& filter, const std::string& after,
                                         int limit, std::vector<EndedSession>* page,
                                         std::string* next_after) {
  // Newest first: "~" sorts after every id ("s_...").
  const std::string before = after.empty() ? std::string("~") : after;
  return ListPage(
      limit, filter.page_budget_bytes, KeyOrder::kDescending,
      [&](PgConn* conn, const PageBounds& bounds, PgResult* r) {
        return conn->Run(pgsql::kListEndedSessions.c_str(),
                         WithWalkParams({P(before), OrNull(filter.tenant), OrNull(filter.region),
                                         OrNull(filter.pool), OrNull(filter.label_key),
                                         P(filter.label_value)},
                                        bounds),
                         r);
      },
      [](const PgResult& r) {
        return ListedPage<EndedSession>(r, kSessionColumnCount + 2, ReadEndedSession);
      },
      page, next_after);
}

}  // namespace store
