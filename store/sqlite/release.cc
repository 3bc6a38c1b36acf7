#include "store/sqlite/release.h"

#include "store/row_columns.h"
#include "store/session_rules.h"
#include "store/sqlite/history_sql.h"
#include "store/sqlite/lifecycle_sql.h"

namespace store {
namespace {

constexpr int kTenantColumn = ColumnIndex(kSessionColumns, "tenant");
static_assert(kTenantColumn >= 0);

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
  StatementRef row;
  StatementRef keep;
  RETURN_IF_ERROR(db->Cached(sql::kGetSession, &row));
  RETURN_IF_ERROR(db->Cached(sql::kKeepEndedSession, &keep));
  row->Bind(1, session_id);
  bool found = false;
  RETURN_IF_ERROR(row->Step(&found));
  if (!found) return Status::Ok();
  // The history row is bound from the row as it is before the release. One
  // writer a file, inside its transaction: no other write comes between this
  // read and the compare-and-swap, so it is the row the release ends.
  // Binding copies, so the read may end before the row changes.
  for (int i = 0; i < kSessionColumnCount; ++i) keep->BindColumnOf(i + 1, *row, i);
  keep->Bind(kSessionColumnCount + 1, ReleaseEndReason(caller, row->ColumnText(kTenantColumn)));
  keep->Bind(kSessionColumnCount + 2, now_ms);
  row->Reset();

  StatementRef cas;
  RETURN_IF_ERROR(db->Cached(sql::kRelease, &cas));
  BindSessionCas(&*cas, session_id, token, caller, now_ms);
  RETURN_IF_ERROR(cas->Run());
  if (db->Changes() != 1) return Status::Ok();
  if (Status kept = keep->Run(); !kept.ok()) {
    return HalfWritten(Status::IOError("session " + session_id +
                                       " released but its history row not written: " +
                                       kept.ToString()));
  }
  *released = true;
  return Status::Ok();
}

}  // namespace store
