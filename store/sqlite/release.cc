#include "store/sqlite/release.h"

#include <string>
#include <utility>
#include <vector>

#include "store/row_columns.h"
#include "store/session_rules.h"
#include "store/sqlite/history_sql.h"
#include "store/sqlite/lifecycle_sql.h"

namespace store {
namespace {

constexpr int kTenantColumn = ColumnIndex(kSessionColumns, "tenant");
constexpr int kContainerColumn = ColumnIndex(kSessionColumns, "id");
constexpr int kSlotColumn = ColumnIndex(kSessionColumns, "slot");
constexpr int kLeaseColumn = ColumnIndex(kSessionColumns, "lease_expires_at_ms");
static_assert(kTenantColumn >= 0 && kContainerColumn >= 0 && kSlotColumn >= 0 &&
              kLeaseColumn >= 0);

// A session's end, bound from the session as it was (`session`, a
// statement stepped on its row, kSessionColumns first) before its row is
// deleted: binding copies, so the writes may run after the row is gone.
struct EndingSession {
  StatementRef keep;       // its history row (kKeepEndedSession)
  StatementRef free_slot;  // its slot back to its container (kFreeSlot)
  StatementRef free_last;  // or, the last of one that reported itself dead (kFreeLastSlotOfDead)
  StatementRef open;       // then its attribute rows open to selectors (kOpenAttributes)
  std::string session_id;

  Status Bind(Db* db, const Statement& session, const std::string& reason, int64_t ended_at_ms,
              int64_t now_ms) {
    RETURN_IF_ERROR(db->Cached(sql::kKeepEndedSession, &keep));
    RETURN_IF_ERROR(db->Cached(sql::kFreeSlot, &free_slot));
    RETURN_IF_ERROR(db->Cached(sql::kFreeLastSlotOfDead, &free_last));
    RETURN_IF_ERROR(db->Cached(sql::kOpenAttributes, &open));
    for (int i = 0; i < kSessionColumnCount; ++i) keep->BindColumnOf(i + 1, session, i);
    keep->Bind(kSessionColumnCount + 1, reason);
    keep->Bind(kSessionColumnCount + 2, ended_at_ms);
    for (Statement* stmt : {&*free_slot, &*free_last}) {
      stmt->BindColumnOf(1, session, kContainerColumn);
      stmt->BindColumnOf(2, session, kSlotColumn);
    }
    free_last->Bind(3, now_ms);
    open->BindColumnOf(1, session, kContainerColumn);
    session_id = session.ColumnString(kSessionKeyColumn);
    return Status::Ok();
  }

  // Reads the session `id` (kGetSession) and binds its end as Bind does,
  // with the reason and end time `end_of(row)` gives; *found is false when
  // there is no such session. One writer a file, inside its transaction: no
  // other write comes between this read and the write that ends the row.
  template <typename EndOf>
  Status BindSession(Db* db, const std::string& id, int64_t now_ms, EndOf end_of, bool* found) {
    StatementRef row;
    RETURN_IF_ERROR(db->Cached(sql::kGetSession, &row));
    row->Bind(1, id);
    RETURN_IF_ERROR(row->Step(found));
    if (!*found) return Status::Ok();
    const auto [reason, ended_at_ms] = end_of(*row);
    return Bind(db, *row, reason, ended_at_ms, now_ms);
  }

  // After the session's row is deleted: its history kept, then its slot
  // freed (in that order, so session.ended comes before a container.dead
  // the freed slot makes), then its container's attribute rows open to
  // selectors. A failure leaves the session deleted without them:
  // HalfWritten, which fails the whole group, so that none of them is
  // committed alone.
  Status Write(Db* db) {
    Status s = keep->Run();
    if (s.ok()) s = free_slot->Run();
    if (s.ok() && db->Changes() == 0) s = free_last->Run();
    if (s.ok() && db->Changes() != 1) {
      s = Status::Corruption("its container had the slot free already");
    }
    if (s.ok()) s = open->Run();
    if (s.ok()) return s;
    return HalfWritten(Status::IOError("session " + session_id +
                                       " ended but its slot or history not written: " +
                                       s.ToString()));
  }
};

}  // namespace

void BindSessionCas(Statement* cas, const std::string& session_id, int64_t token,
                    const Caller& caller, int64_t now_ms) {
  cas->Bind(1, session_id);
  cas->Bind(2, token);
  if (caller.admin) {
    cas->BindNull(3);
  } else {
    cas->Bind(3, caller.tenant);
  }
  cas->Bind(4, now_ms);
}

Status ReleaseInTransaction(Db* db, const Caller& caller, const std::string& session_id,
                            int64_t token, int64_t now_ms, bool* released) {
  *released = false;
  EndingSession end;
  bool found = false;
  RETURN_IF_ERROR(end.BindSession(
      db, session_id, now_ms,
      [&](const Statement& row) {
        return std::pair<std::string, int64_t>(
            ReleaseEndReason(caller, row.ColumnText(kTenantColumn)), now_ms);
      },
      &found));
  if (!found) return Status::Ok();
  StatementRef cas;
  RETURN_IF_ERROR(db->Cached(sql::kRelease, &cas));
  BindSessionCas(&*cas, session_id, token, caller, now_ms);
  RETURN_IF_ERROR(cas->Run());
  if (db->Changes() != 1) return Status::Ok();
  RETURN_IF_ERROR(end.Write(db));
  *released = true;
  return Status::Ok();
}

Status EndExpiredSessions(Db* db, int64_t now_ms, int64_t limit, int64_t* ended) {
  *ended = 0;
  // Their ids first: no session is deleted under the walk that finds them.
  std::vector<std::string> ids;
  {
    StatementRef expired;
    RETURN_IF_ERROR(db->Cached(sql::kExpiredSessions, &expired));
    expired->Bind(1, now_ms);
    expired->Bind(2, limit);
    for (;;) {
      bool row = false;
      RETURN_IF_ERROR(expired->Step(&row));
      if (!row) break;
      ids.push_back(expired->ColumnString(0));
    }
  }
  for (const std::string& id : ids) {
    EndingSession end;
    bool found = false;
    RETURN_IF_ERROR(end.BindSession(
        db, id, now_ms,
        [](const Statement& row) {
          // Ended when its lease ran out, not when the sweep saw it.
          return std::pair<std::string, int64_t>("expired", row.ColumnInt64(kLeaseColumn));
        },
        &found));
    if (!found) continue;
    StatementRef gone;
    RETURN_IF_ERROR(db->Cached(sql::kDeleteSession, &gone));
    gone->Bind(1, id);
    RETURN_IF_ERROR(gone->Run());
    if (db->Changes() != 1) continue;
    RETURN_IF_ERROR(end.Write(db));
    ++*ended;
  }
  return Status::Ok();
}

}  // namespace store
