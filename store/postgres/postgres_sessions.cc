// PostgresStorage: the session operations (claim, release, renew, read).
#include <cassert>
#include <memory>
#include <string>
#include <utility>

#include "store/list_page.h"
#include "store/postgres/lifecycle_sql.h"
#include "store/postgres/postgres_storage.h"
#include "store/session_id.h"
#include "store/session_rules.h"

namespace store {
namespace {

void ReadSession(const PgResult& r, Session* s, int row = 0) {
  s->container_id = r.String(row, 0);
  s->region = r.String(row, 1);
  s->pool = r.String(row, 2);
  s->token = r.Int64(row, 3);
  s->lease_expires_at_ms = r.Int64(row, 4);
  s->data = r.String(row, 5);
  s->labels = r.IsNull(row, 6) ? "{}" : r.String(row, 6);
  s->tenant = r.IsNull(row, 7) ? "" : r.String(row, 7);
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
    ReadSession(r, &found->session);
    found->session.session_id = r.String(0, 8);
    found->outcome = Outcome::kReplayed;
  }
  return Status::Ok();
}

// Durations only: the statement takes its now from the database.
PgStatement ClaimStatement(const ClaimRequest& req, const std::string& region,
                           const ClaimPolicy& policy, const std::string& session_id) {
  return {pgsql::kClaim,
          {P(region), P(req.pool), P(policy.dead_after_ms), P(int64_t{policy.candidates}),
           P(session_id), P(req.caller.tenant),
           req.idempotency_key.empty() ? Null() : P(req.idempotency_key), P(req.lease_ms),
           P(policy.max_sessions_per_tenant), req.labels.empty() ? Null() : P(req.labels)}};
}

// What a claim runs first: the key's lookup, or the claim in its region.
PgStatement FirstOfClaim(const ClaimRequest& req, const ClaimPolicy& policy,
                         const std::string& session_id) {
  return req.idempotency_key.empty() ? ClaimStatement(req, req.region, policy, session_id)
                                     : FindIdempotentStatement(req);
}

// The claim statement for one region (with an idempotency key, under a
// savepoint of its own, so that a refused key undoes only it). *claimed if
// it took a container.
Status ClaimIn(PgConn* conn, const ClaimRequest& req, const std::string& region,
               const ClaimPolicy& policy, const std::string& session_id, SessionResult* out,
               bool* claimed) {
  // Only a claim with a key can be refused by the unique index and must be
  // undone alone to try again; any other failure fails the job (whose
  // savepoint the writer rolls back), so it saves the two round trips.
  const bool keyed = !req.idempotency_key.empty();
  if (keyed) RETURN_IF_ERROR(conn->Exec("SAVEPOINT claim"));
  PgResult r;
  const PgStatement claim = ClaimStatement(req, region, policy, session_id);
  Status s = conn->Run(claim.sql, claim.params, &r);
  if (keyed) {
    RETURN_IF_ERROR(conn->Exec(s.ok() ? "RELEASE SAVEPOINT claim" : "ROLLBACK TO SAVEPOINT claim"));
  }
  RETURN_IF_ERROR(s);
  *claimed = r.rows() > 0;
  if (*claimed) {
    ReadSession(r, &out->session);
    out->session.session_id = session_id;
    out->outcome = Outcome::kOk;
  }
  return Status::Ok();
}

// Tries the request's regions in order; the first with a fitting container
// wins. Under a quota the tenant's advisory lock is held (the writer took it
// at the group's start: PgJob::AddLockKeys), so concurrent claims of one
// tenant, on any node, count its sessions one after another and no two pass
// the quota together.
Status ClaimRegions(PgConn* conn, const ClaimRequest& req, const ClaimPolicy& policy,
                    const std::string& session_id, SessionResult* out) {
  if (!req.idempotency_key.empty()) {
    RETURN_IF_ERROR(FindIdempotent(conn, req, out));
    if (out->outcome == Outcome::kReplayed) return Status::Ok();
  }
  std::vector<std::string> regions{req.region};
  regions.insert(regions.end(), req.fallback_regions.begin(), req.fallback_regions.end());
  for (const std::string& region : regions) {
    bool claimed = false;
    Status s = ClaimIn(conn, req, region, policy, session_id, out, &claimed);
    if (s.IsConflict() && !req.idempotency_key.empty()) {
      // The unique index refused the key. Another node's claim of it
      // committed meanwhile (the index waited for it): that session is the
      // answer. Or an expired session still holds it: let it go, claim again.
      RETURN_IF_ERROR(FindIdempotent(conn, req, out));
      if (out->outcome == Outcome::kReplayed) return Status::Ok();
      RETURN_IF_ERROR(
          conn->Run(pgsql::kForgetExpiredKey, {P(req.caller.tenant), P(req.idempotency_key)}));
      s = ClaimIn(conn, req, region, policy, session_id, out, &claimed);
    }
    RETURN_IF_ERROR(s);
    if (claimed) return Status::Ok();
  }
  out->outcome = Outcome::kNoCapacity;
  if (policy.max_sessions_per_tenant != kUnlimited) {
    PgResult count;
    RETURN_IF_ERROR(conn->Run(pgsql::kCountTenantSessions, {P(req.caller.tenant)}, &count));
    if (count.rows() > 0 && count.Int64(0, 0) >= policy.max_sessions_per_tenant) {
      out->outcome = Outcome::kQuotaExceeded;
    }
  }
  return Status::Ok();
}

// After a compare-and-swap on (session_id, token) changed nothing: why not,
// judged on the database's clock.
Status ExplainFailedCas(PgConn* conn, const Caller& caller, const std::string& id, int64_t token,
                        SessionResult* out) {
  PgResult r;
  RETURN_IF_ERROR(conn->Run(pgsql::kSessionState, {P(id)}, &r));
  StoredSession stored;
  int64_t now = 0;  // no row: the lease need not be judged
  if (r.rows() > 0) {
    stored = {r.Text(0, 1), r.Int64(0, 2), r.Int64(0, 0)};
    now = r.Int64(0, 3);
  }
  return store::ExplainFailedCas(caller, id, token, r.rows() > 0 ? &stored : nullptr, now, out);
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
  // The tenant's quota lock, taken by the writer before the group's jobs.
  std::string lock_key =
      policy.max_sessions_per_tenant != kUnlimited ? request->caller.tenant : std::string();
  // No time is taken here: the statements read the database's clock when
  // they run (lifecycle_sql.h), however long the claim waited in the queue.
  PgStatement first = FirstOfClaim(*request, policy, session_id);
  Submit<SessionResult>(
      [request, session_id, policy](PgConn* conn, SessionResult* out) {
        return ClaimRegions(conn, *request, policy, session_id, out);
      },
      std::move(done), std::move(lock_key), std::move(first));
}

void PostgresStorage::Release(const Caller& caller, std::string session_id, int64_t token,
                              SessionCallback done) {
  PgStatement release{pgsql::kRelease,
                      {P(session_id), P(token), caller.admin ? Null() : P(caller.tenant)}};
  Submit<SessionResult>(
      [caller, session_id, token, release](PgConn* conn, SessionResult* out) {
        PgResult r;
        RETURN_IF_ERROR(conn->Run(release.sql, release.params, &r));
        if (r.changed() == 1) {
          out->outcome = Outcome::kOk;
          out->session.session_id = session_id;
          return Status::Ok();
        }
        return ExplainFailedCas(conn, caller, session_id, token, out);
      },
      std::move(done), "", release, PgRowLocks{{}, {session_id}});
}

void PostgresStorage::Renew(const Caller& caller, std::string session_id, int64_t token,
                            int64_t lease_ms, SessionCallback done) {
  assert(lease_ms > 0);
  PgStatement renew{pgsql::kRenew,
                    {P(session_id), P(token), caller.admin ? Null() : P(caller.tenant),
                     P(lease_ms)}};
  Submit<SessionResult>(
      [caller, session_id, token, renew](PgConn* conn, SessionResult* out) {
        PgResult r;
        RETURN_IF_ERROR(conn->Run(renew.sql, renew.params, &r));
        if (r.rows() == 1) {
          ReadSession(r, &out->session);
          out->session.session_id = session_id;
          out->outcome = Outcome::kOk;
          return Status::Ok();
        }
        return ExplainFailedCas(conn, caller, session_id, token, out);
      },
      std::move(done), "", renew, PgRowLocks{{}, {session_id}});
}

SessionResult PostgresStorage::GetSession(const Caller& caller, std::string_view session_id) {
  const std::string id(session_id);
  SessionResult result = Failed<SessionResult>(Outcome::kNotFound, "no session " + id);
  if (ShardOfSessionId(id, 1) < 0) return result;
  Status s = WithReader([&](PgConn* conn) {
    PgResult r;
    RETURN_IF_ERROR(conn->Run(pgsql::kGetSession, {P(id)}, &r));
    if (r.rows() == 0) return Status::Ok();
    const StoredSession stored{r.Text(0, 7), r.Int64(0, 4), r.Int64(0, 3)};
    // The lease is judged on the database's clock (the row's last column).
    if (auto refused = RefuseSessionRead(caller, id, stored, r.Int64(0, 8))) {
      result = std::move(*refused);
    } else {
      result = SessionResult{Outcome::kOk, {}, ""};
      ReadSession(r, &result.session);
      result.session.session_id = id;
    }
    return Status::Ok();
  });
  if (!s.ok()) return Failed<SessionResult>(OutcomeOfError(s), s.ToString());
  return result;
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
  page->clear();
  next_after->clear();
  auto or_null = [](const std::string& v) { return v.empty() ? Null() : P(v); };
  const bool one_tenant = !filter.tenant.empty();
  return WithReader([&](PgConn* conn) {
    PgResult r;
    std::vector<PgParam> params = {P(after),
                                   or_null(filter.region),
                                   or_null(filter.pool),
                                   or_null(filter.label_key),
                                   P(filter.label_value),
                                   P(static_cast<int64_t>(limit) + 1),
                                   P(ListExamineBound(limit))};
    if (one_tenant) params.push_back(P(filter.tenant));
    RETURN_IF_ERROR(conn->Run(one_tenant ? pgsql::kListTenantSessions : pgsql::kListSessions,
                              params, &r));
    PartitionPage<Session> part;
    for (int i = 0; i < r.rows(); ++i) {
      // The row of the last session examined, when the bound was reached.
      if (r.Text(i, 9) != "t") {
        part.stopped_at = r.String(i, 8);
        continue;
      }
      Session s;
      ReadSession(r, &s, i);
      s.session_id = r.String(i, 8);
      part.hits.push_back(std::move(s));
    }
    std::vector<PartitionPage<Session>> parts;
    parts.push_back(std::move(part));
    MergePartitionPages(
        std::move(parts), limit,
        [](const Session& s) -> const std::string& { return s.session_id; }, page, next_after);
    return Status::Ok();
  });
}

}  // namespace store
