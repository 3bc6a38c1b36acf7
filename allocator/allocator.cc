#include "allocator/allocator.h"

#include <cassert>
#include <chrono>
#include <cerrno>
#include <cstring>

#include <sys/random.h>

#include "allocator/sql.h"
#include "base/clock.h"

namespace allocator {
namespace {

using store::Db;
using store::Status;
using store::StatementRef;

// Sweeps one reaper call runs a shard for at most, so that a backlog of
// expired leases is freed in several short transactions, not one long one.
constexpr int kMaxSweepsPerReap = 8;

Outcome OutcomeOfStorage(const Status& s) {
  return s.IsBusy() ? Outcome::kOverloaded : Outcome::kError;
}

SessionResult Fail(Outcome outcome, std::string message) {
  SessionResult r;
  r.outcome = outcome;
  r.message = std::move(message);
  return r;
}

// Reads a session row of kFindIdempotent's shape into *s.
void ReadIdempotentRow(store::Statement& q, Session* s) {
  s->session_id = q.ColumnString(0);
  s->container_id = q.ColumnString(1);
  s->region = q.ColumnString(2);
  s->pool = q.ColumnString(3);
  s->token = q.ColumnInt64(4);
  s->lease_expires_at_ms = q.ColumnInt64(5);
  s->data = q.ColumnString(6);
}

// After a CAS on (session_id, token) changed nothing: why not.
SessionResult ExplainFailedCas(Db* db, const Caller& caller, const std::string& session_id,
                               int64_t token, int64_t now_ms) {
  Status s;
  StatementRef q;
  s = db->Cached(sql::kSessionState, &q);
  if (!s.ok()) return Fail(Outcome::kError, s.ToString());
  q->Bind(1, session_id);
  bool row = false;
  s = q->Step(&row);
  if (!s.ok()) return Fail(Outcome::kError, s.ToString());
  if (!row) return Fail(Outcome::kNotFound, "no session " + session_id);
  if (!caller.admin && q->ColumnText(1) != caller.tenant) {
    return Fail(Outcome::kForbidden, "session " + session_id + " belongs to another tenant");
  }
  if (q->ColumnInt64(2) <= now_ms) {
    return Fail(Outcome::kNotFound, "session " + session_id + " has expired");
  }
  if (q->ColumnInt64(0) != token) {
    return Fail(Outcome::kStaleToken, "token " + std::to_string(token) +
                                          " is not current for session " + session_id);
  }
  return Fail(Outcome::kError, "compare-and-swap failed for an unknown reason");
}

}  // namespace

Status KernelRandomBytes(void* buf, size_t n) {
  auto* p = static_cast<unsigned char*>(buf);
  while (n > 0) {
    // Flags 0: the urandom pool, blocking only until it is first seeded at
    // boot. Reads of up to 256 bytes are never short, but a longer one, or
    // one interrupted by a signal, may be.
    ssize_t got = getrandom(p, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(std::string("getrandom(2) failed: ") + std::strerror(errno));
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return Status::Ok();
}

// One claim request on its way through its regions, shard by shard.
struct Allocator::ClaimAttempt {
  ClaimRequest req;
  std::vector<std::string> regions;  // the region, then the fallbacks
  int64_t lease_ms = 0;
  SessionCallback done;
};

// Runs the claim statement for regions[first, last) of one shard, in order,
// under one savepoint: the first region with a fitting container wins.
class Allocator::ClaimJob : public store::WriteJob {
 public:
  ClaimJob(Allocator* a, std::shared_ptr<ClaimAttempt> attempt, size_t first, size_t last,
           std::string session_id, int64_t quota)
      : a_(a),
        attempt_(std::move(attempt)),
        first_(first),
        last_(last),
        session_id_(std::move(session_id)),
        quota_(quota) {}

  Status Apply(Db* db) override {
    const ClaimRequest& req = attempt_->req;
    const int64_t now = base::NowMs();
    Status s;
    if (!req.idempotency_key.empty()) {
      // A retry of a claim that already holds a session is that session.
      // The unique index on (tenant, idempotency_key) is the backstop.
      {
        StatementRef q;
        RETURN_IF_ERROR(db->Cached(sql::kFindIdempotent, &q));
        q->Bind(1, req.caller.tenant);
        q->Bind(2, req.idempotency_key);
        q->Bind(3, now);
        bool row = false;
        s = q->Step(&row);
        if (!s.ok()) return s;
        if (row) {
          ReadIdempotentRow(*q, &result_.session);
          result_.outcome = Outcome::kReplayed;
          return Status::Ok();
        }
      }
    }
    bool forgot_expired_key = false;
    for (size_t i = first_; i < last_; ++i) {
      StatementRef claim;
      RETURN_IF_ERROR(db->Cached(sql::kClaim, &claim));
      claim->Bind(1, attempt_->regions[i]);
      claim->Bind(2, req.pool);
      claim->Bind(3, now - a_->options_.dead_after_ms);
      claim->Bind(4, static_cast<int64_t>(a_->options_.candidates));
      claim->Bind(5, session_id_);
      claim->Bind(6, req.caller.tenant);
      if (req.idempotency_key.empty()) {
        claim->BindNull(7);
      } else {
        claim->Bind(7, req.idempotency_key);
      }
      claim->Bind(8, now + attempt_->lease_ms);
      claim->Bind(9, now);
      claim->Bind(10, quota_);
      bool row = false;
      s = claim->Step(&row);
      if (s.IsConflict() && !req.idempotency_key.empty() && !forgot_expired_key) {
        // The unique index refused the key: an expired session, not yet
        // reaped, still holds it (a live one was replayed above). Let it go
        // and claim again. Only this rare path pays for the extra statement.
        claim->Reset();
        s = ForgetExpiredKey(db, now);
        if (!s.ok()) return s;
        forgot_expired_key = true;
        --i;  // the same region again (a defined unsigned wrap when i is 0)
        continue;
      }
      if (!s.ok()) return s;
      if (row) {
        Session& out = result_.session;
        out.session_id = session_id_;
        out.container_id = claim->ColumnString(0);
        out.region = attempt_->regions[i];
        out.pool = req.pool;
        out.token = claim->ColumnInt64(1);
        out.lease_expires_at_ms = claim->ColumnInt64(2);
        out.data = claim->ColumnString(3);
        result_.outcome = Outcome::kOk;
        return claim->Run();  // finish the statement so its change is whole
      }
    }
    // Nothing fitted: was it the quota? Only this path pays for the count.
    result_.outcome = Outcome::kNoCapacity;
    if (quota_ >= 0) {
      StatementRef count;
      RETURN_IF_ERROR(db->Cached(sql::kCountTenantSessions, &count));
      count->Bind(1, req.caller.tenant);
      bool row = false;
      s = count->Step(&row);
      if (!s.ok()) return s;
      if (row && count->ColumnInt64(0) >= quota_) result_.outcome = Outcome::kQuotaExceeded;
    }
    return Status::Ok();
  }

  // Without an idempotency key the job writes with one statement at most:
  // each region's claim either changes one row or nothing, and a failing one
  // undoes itself. With a key, ForgetExpiredKey may write before the claim.
  bool needs_savepoint() const override { return !attempt_->req.idempotency_key.empty(); }

  Status ForgetExpiredKey(Db* db, int64_t now) {
    Status s;
    StatementRef forget;
    RETURN_IF_ERROR(db->Cached(sql::kForgetExpiredKey, &forget));
    forget->Bind(1, attempt_->req.caller.tenant);
    forget->Bind(2, attempt_->req.idempotency_key);
    forget->Bind(3, now);
    return forget->Run();
  }

  void Done(Status status) override {
    if (!status.ok()) {
      a_->stats_.claims_error.fetch_add(1, std::memory_order_relaxed);
      attempt_->done(Fail(OutcomeOfStorage(status), status.ToString()));
      return;
    }
    if (result_.outcome == Outcome::kNoCapacity && last_ < attempt_->regions.size()) {
      a_->RunClaim(std::move(attempt_), last_);  // the next shard's regions
      return;
    }
    switch (result_.outcome) {
      case Outcome::kOk: a_->stats_.claims_ok.fetch_add(1, std::memory_order_relaxed); break;
      case Outcome::kReplayed:
        a_->stats_.claims_replayed.fetch_add(1, std::memory_order_relaxed);
        break;
      case Outcome::kQuotaExceeded:
        a_->stats_.claims_quota.fetch_add(1, std::memory_order_relaxed);
        result_.message = "tenant " + attempt_->req.caller.tenant + " holds its maximum of " +
                          std::to_string(a_->options_.max_sessions_per_tenant) + " sessions";
        break;
      default:
        a_->stats_.claims_no_capacity.fetch_add(1, std::memory_order_relaxed);
        result_.message = "no healthy available container in pool " + attempt_->req.pool +
                          " of region " + attempt_->regions.front() +
                          (attempt_->regions.size() > 1 ? " or its fallback regions" : "");
        break;
    }
    attempt_->done(std::move(result_));
  }

 private:
  Allocator* a_;
  std::shared_ptr<ClaimAttempt> attempt_;
  size_t first_, last_;
  std::string session_id_;
  int64_t quota_;
  SessionResult result_;
};

// Release or renew: one compare-and-swap on (session_id, token).
class Allocator::SessionCasJob : public store::WriteJob {
 public:
  using Kind = CasKind;
  SessionCasJob(Allocator* a, Kind kind, Caller caller, std::string session_id, int64_t token,
                int64_t lease_ms, SessionCallback done)
      : a_(a),
        kind_(kind),
        caller_(std::move(caller)),
        session_id_(std::move(session_id)),
        token_(token),
        lease_ms_(lease_ms),
        done_(std::move(done)) {}

  Status Apply(Db* db) override {
    const int64_t now = base::NowMs();
    Status s;
    StatementRef cas;
    RETURN_IF_ERROR(db->Cached(kind_ == Kind::kRelease ? sql::kRelease : sql::kRenew, &cas));
    cas->Bind(1, session_id_);
    cas->Bind(2, token_);
    if (caller_.admin) {
      cas->BindNull(3);
    } else {
      cas->Bind(3, caller_.tenant);
    }
    cas->Bind(4, now);
    if (kind_ == Kind::kRenew) cas->Bind(5, now + lease_ms_);
    if (kind_ == Kind::kRelease) {
      s = cas->Run();
      if (!s.ok()) return s;
      if (db->Changes() == 1) {
        result_.outcome = Outcome::kOk;
        result_.session.session_id = session_id_;
        return Status::Ok();
      }
    } else {
      bool row = false;
      s = cas->Step(&row);
      if (!s.ok()) return s;
      if (row) {
        result_.outcome = Outcome::kOk;
        Session& out = result_.session;
        out.session_id = session_id_;
        out.container_id = cas->ColumnString(0);
        out.region = cas->ColumnString(1);
        out.pool = cas->ColumnString(2);
        out.token = cas->ColumnInt64(3);
        out.lease_expires_at_ms = cas->ColumnInt64(4);
        out.data = cas->ColumnString(5);
        return cas->Run();
      }
    }
    cas->Reset();
    result_ = ExplainFailedCas(db, caller_, session_id_, token_, now);
    return result_.outcome == Outcome::kError ? Status::IOError(result_.message) : Status::Ok();
  }

  // One UPDATE; ExplainFailedCas only reads.
  bool needs_savepoint() const override { return false; }

  void Done(Status status) override {
    if (!status.ok()) {
      done_(Fail(OutcomeOfStorage(status), status.ToString()));
      return;
    }
    if (result_.outcome == Outcome::kOk) {
      (kind_ == Kind::kRelease ? a_->stats_.releases : a_->stats_.renewals)
          .fetch_add(1, std::memory_order_relaxed);
    } else if (result_.outcome == Outcome::kStaleToken) {
      a_->stats_.stale_tokens.fetch_add(1, std::memory_order_relaxed);
    }
    done_(std::move(result_));
  }

 private:
  Allocator* a_;
  Kind kind_;
  Caller caller_;
  std::string session_id_;
  int64_t token_;
  int64_t lease_ms_;
  SessionCallback done_;
  SessionResult result_;
};

Allocator::Allocator(std::vector<store::Shard*> shards, store::ShardMap map,
                     AllocatorOptions options)
    : shards_(std::move(shards)), map_(std::move(map)), options_(options) {
  assert(static_cast<int>(shards_.size()) == map_.shards());
}

Allocator::~Allocator() { Stop(); }

void Allocator::Start() {
  base::MutexLock lock(&reaper_mu_);
  reaper_stop_ = false;
  if (!reaper_.joinable()) reaper_ = std::thread([this] { ReaperLoop(); });
}

void Allocator::Stop() {
  {
    base::MutexLock lock(&reaper_mu_);
    reaper_stop_ = true;
  }
  reaper_cv_.SignalAll();
  if (reaper_.joinable()) reaper_.join();
}

Status Allocator::NewSessionId(int shard, std::string* id) {
  // "s_" + the shard in two hex digits + 128 random bits: the shard tells
  // GET and release where to look without asking every file. The bits are
  // the kernel's: a session id is a bearer-like handle, and a seeded PRNG
  // (mt19937_64 before #12) gives its later outputs away from a few ids.
  unsigned char bits[16];
  Status s = KernelRandomBytes(bits, sizeof(bits));
  if (!s.ok()) return s;
  static constexpr char kHex[] = "0123456789abcdef";
  char buf[2 + 2 + 2 * sizeof(bits)];
  buf[0] = 's';
  buf[1] = '_';
  buf[2] = kHex[(shard >> 4) & 0xf];
  buf[3] = kHex[shard & 0xf];
  for (size_t i = 0; i < sizeof(bits); ++i) {
    buf[4 + 2 * i] = kHex[bits[i] >> 4];
    buf[5 + 2 * i] = kHex[bits[i] & 0xf];
  }
  id->assign(buf, sizeof(buf));
  return Status::Ok();
}

int Allocator::ShardOfSession(std::string_view id) const {
  if (id.size() != 36 || id.substr(0, 2) != "s_") return -1;
  int shard = 0;
  for (char c : id.substr(2, 2)) {
    int v = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (v < 0) return -1;
    shard = shard * 16 + v;
  }
  return shard < map_.shards() ? shard : -1;
}

void Allocator::Claim(ClaimRequest req, SessionCallback done) {
  assert(req.lease_ms >= 0 && req.lease_ms <= options_.max_lease_ms);
  auto attempt = std::make_shared<ClaimAttempt>();
  attempt->lease_ms = req.lease_ms > 0 ? req.lease_ms : options_.default_lease_ms;
  attempt->regions.reserve(1 + req.fallback_regions.size());
  attempt->regions.push_back(req.region);
  for (auto& r : req.fallback_regions) attempt->regions.push_back(std::move(r));
  attempt->req = std::move(req);
  attempt->done = std::move(done);

  if (map_.shards() > 1 && !attempt->req.idempotency_key.empty()) {
    // With shards the key's session may live in another region's file: look
    // in every file first, from committed state. (Two concurrent duplicates
    // whose claims land in different shards are not caught: README says so.)
    for (store::Shard* shard : shards_) {
      SessionResult found;
      Status s = shard->reads->With([&](Db* db) {
        Status st;
        StatementRef q;
        RETURN_IF_ERROR(db->Cached(sql::kFindIdempotent, &q));
        q->Bind(1, attempt->req.caller.tenant);
        q->Bind(2, attempt->req.idempotency_key);
        q->Bind(3, base::NowMs());
        bool row = false;
        st = q->Step(&row);
        if (st.ok() && row) {
          ReadIdempotentRow(*q, &found.session);
          found.outcome = Outcome::kReplayed;
        }
        return st;
      });
      if (!s.ok()) {
        // Not knowing whether the key has a session is no licence to make a
        // second one: storage trouble is answered as such.
        return FailClaim(*attempt, OutcomeOfStorage(s), s.ToString());
      }
      if (found.outcome == Outcome::kReplayed) {
        stats_.claims_replayed.fetch_add(1, std::memory_order_relaxed);
        attempt->done(std::move(found));
        return;
      }
    }
  }
  RunClaim(std::move(attempt), 0);
}

void Allocator::FailClaim(ClaimAttempt& attempt, Outcome outcome, std::string message) {
  stats_.claims_error.fetch_add(1, std::memory_order_relaxed);
  attempt.done(Fail(outcome, std::move(message)));
}

void Allocator::RunClaim(std::shared_ptr<ClaimAttempt> attempt, size_t first) {
  // Consecutive regions of the same shard are tried in one job, in order.
  const int shard = map_.ShardOf(attempt->regions[first]);
  size_t last = first + 1;
  while (last < attempt->regions.size() && map_.ShardOf(attempt->regions[last]) == shard) ++last;

  int64_t quota = options_.max_sessions_per_tenant;
  if (quota >= 0 && map_.shards() > 1) {
    // The statement counts this shard's sessions; the other shards' share is
    // read here, from committed state, and taken off the quota.
    for (store::Shard* other : shards_) {
      if (other->index == shard) continue;
      Status s = other->reads->With([&](Db* db) {
        Status st;
        StatementRef q;
        RETURN_IF_ERROR(db->Cached(sql::kCountTenantSessions, &q));
        q->Bind(1, attempt->req.caller.tenant);
        bool row = false;
        st = q->Step(&row);
        if (st.ok() && row) quota -= q->ColumnInt64(0);
        return st;
      });
      if (!s.ok()) {
        // An unread share would let the tenant past its quota.
        return FailClaim(*attempt, OutcomeOfStorage(s), s.ToString());
      }
    }
    if (quota < 0) quota = 0;
  }
  std::string session_id;
  if (Status s = NewSessionId(shard, &session_id); !s.ok()) {
    // Never a weaker id instead: the claim fails as storage trouble (503).
    return FailClaim(*attempt, Outcome::kError, "no session id: " + s.ToString() + "; retry");
  }
  std::unique_ptr<store::WriteJob> job = std::make_unique<ClaimJob>(
      this, std::move(attempt), first, last, std::move(session_id), quota);
  if (!shards_[shard]->writer->Submit(std::move(job))) {
    // Refused, so never run: the job answers for itself (overloaded).
    job->Done(Status::Busy("the claim queue of shard " + std::to_string(shard) +
                           " is full; retry shortly"));
  }
}

void Allocator::Release(const Caller& caller, std::string session_id, int64_t token,
                        SessionCallback done) {
  RunSessionCas(CasKind::kRelease, caller, std::move(session_id), token, 0,
                std::move(done));
}

void Allocator::Renew(const Caller& caller, std::string session_id, int64_t token,
                      int64_t lease_ms, SessionCallback done) {
  assert(lease_ms >= 0 && lease_ms <= options_.max_lease_ms);
  RunSessionCas(CasKind::kRenew, caller, std::move(session_id), token,
                lease_ms > 0 ? lease_ms : options_.default_lease_ms, std::move(done));
}

void Allocator::RunSessionCas(CasKind kind, const Caller& caller,
                              std::string session_id, int64_t token, int64_t lease_ms,
                              SessionCallback done) {
  const int shard = ShardOfSession(session_id);
  if (shard < 0) {
    done(Fail(Outcome::kNotFound, "no session " + session_id));
    return;
  }
  std::unique_ptr<store::WriteJob> job = std::make_unique<SessionCasJob>(
      this, kind, caller, std::move(session_id), token, lease_ms, std::move(done));
  if (!shards_[shard]->writer->Submit(std::move(job))) {
    job->Done(Status::Busy("the write queue of shard " + std::to_string(shard) +
                           " is full; retry shortly"));
  }
}

SessionResult Allocator::GetSession(const Caller& caller, std::string_view session_id) {
  const std::string id(session_id);
  const int shard = ShardOfSession(id);
  if (shard < 0) return Fail(Outcome::kNotFound, "no session " + id);
  SessionResult result = Fail(Outcome::kNotFound, "no session " + id);
  Status s = shards_[shard]->reads->With([&](Db* db) {
    Status st;
    StatementRef q;
    RETURN_IF_ERROR(db->Cached(sql::kGetSession, &q));
    q->Bind(1, id);
    bool row = false;
    st = q->Step(&row);
    if (!st.ok() || !row) return st;
    // Tenant first: another tenant must not learn that a session existed
    // and when it ended.
    if (!caller.admin && q->ColumnText(6) != caller.tenant) {
      result = Fail(Outcome::kForbidden, "session " + id + " belongs to another tenant");
      return st;
    }
    if (q->ColumnInt64(4) <= base::NowMs()) {
      result = Fail(Outcome::kNotFound, "session " + id + " has expired");
      return st;
    }
    result.outcome = Outcome::kOk;
    result.message.clear();
    Session& out = result.session;
    out.session_id = id;
    out.container_id = q->ColumnString(0);
    out.region = q->ColumnString(1);
    out.pool = q->ColumnString(2);
    out.token = q->ColumnInt64(3);
    out.lease_expires_at_ms = q->ColumnInt64(4);
    out.data = q->ColumnString(5);
    return st;
  });
  if (!s.ok()) return Fail(OutcomeOfStorage(s), s.ToString());
  return result;
}

int64_t Allocator::ReapExpiredLeases() {
  int64_t freed = 0;
  for (store::Shard* shard : shards_) {
    for (int sweep = 0; sweep < kMaxSweepsPerReap; ++sweep) {
      const int64_t now = base::NowMs();
      // A read first: an idle pool costs the writer nothing.
      bool any = false;
      Status s = shard->reads->With([&](Db* db) {
        Status st;
        StatementRef q;
        RETURN_IF_ERROR(db->Cached(sql::kAnyExpired, &q));
        q->Bind(1, now);
        return q->Step(&any);
      });
      if (!s.ok() || !any) break;
      int64_t changed = 0;
      s = shard->writer->RunSync(
          [&](Db* db) {
            Status st;
            StatementRef q;
            RETURN_IF_ERROR(db->Cached(sql::kReapExpired, &q));
            q->Bind(1, now);
            q->Bind(2, static_cast<int64_t>(options_.reaper_batch_rows));
            st = q->Run();
            changed = db->Changes();
            return st;
          },
          /*solo=*/true);
      if (!s.ok()) break;
      freed += changed;
      stats_.lease_expiries.fetch_add(static_cast<uint64_t>(changed), std::memory_order_relaxed);
      if (changed < options_.reaper_batch_rows) break;
    }
  }
  return freed;
}

void Allocator::ReaperLoop() {
  for (;;) {
    {
      base::MutexLock lock(&reaper_mu_);
      if (!reaper_stop_) {
        reaper_cv_.WaitFor(&reaper_mu_, std::chrono::milliseconds(options_.reaper_interval_ms));
      }
      if (reaper_stop_) return;
    }
    ReapExpiredLeases();
  }
}

}  // namespace allocator
