// SqliteStorage: the session lists (live and ended), a page at a time over
// every shard.
#include <string>
#include <vector>

#include "store/list_page.h"
#include "store/sqlite/list_sql.h"
#include "store/sqlite/rows.h"
#include "store/sqlite/sqlite_storage.h"

namespace store {

Status SqliteStorage::ListSessions(const SessionFilter& filter, const std::string& after,
                                  int limit, std::vector<Session>* page,
                                  std::string* next_after) {
  // Each shard's `now` is on its rows' timeline (a list that meets a shift
  // of the clock committing may keep or drop a session at its edge).
  std::vector<int64_t> now_of(shards_.size());
  for (size_t i = 0; i < shards_.size(); ++i) now_of[i] = ShardNow(static_cast<int>(i));
  const auto now_at = [&](const Db* db) {
    for (size_t i = 0; i < shards_.size(); ++i) {
      if (shards_[i]->path == db->path()) return now_of[i];
    }
    return now_of[0];
  };
  // Each shard walks its sessions after `after` in id order and stops after
  // ListExamineBound(limit) of them, at limit + 1 hits (one more than a page
  // says a next page exists), or at the page's byte budget;
  // MergePartitionPages makes the page.
  return ListOverShards(
      shards_, kSessionColumns, kSessionKeyColumn, limit, filter.page_budget_bytes,
      [&](Db* db, StatementRef* q) {
        RETURN_IF_ERROR(
            db->Cached(filter.tenant.empty() ? sql::kListSessions : sql::kListTenantSessions, q));
        (*q)->Bind(1, after);
        (*q)->Bind(2, now_at(db));
        BindOrNull(&**q, 3, filter.region);
        BindOrNull(&**q, 4, filter.pool);
        BindOrNull(&**q, 5, filter.label_key);
        (*q)->Bind(6, filter.label_value);
        if (!filter.tenant.empty()) (*q)->Bind(7, filter.tenant);
        return Status::Ok();
      },
      page, next_after);
}

Status SqliteStorage::ListEndedSessions(const SessionFilter& filter, const std::string& after,
                                       int limit, std::vector<EndedSession>* page,
                                       std::string* next_after) {
  // As ListSessions, newest first: "~" sorts after every id ("s_...").
  const std::string before = after.empty() ? "~" : after;
  return ListOverShards(
      shards_, /*kept=*/kSessionColumnCount + 2, kSessionKeyColumn, limit,
      filter.page_budget_bytes, KeyOrder::kDescending,
      [&](Db* db, StatementRef* q) {
        RETURN_IF_ERROR(db->Cached(sql::kListEndedSessions, q));
        (*q)->Bind(1, before);
        BindOrNull(&**q, 2, filter.tenant);
        BindOrNull(&**q, 3, filter.region);
        BindOrNull(&**q, 4, filter.pool);
        BindOrNull(&**q, 5, filter.label_key);
        (*q)->Bind(6, filter.label_value);
        return Status::Ok();
      },
      ReadEndedSessionRow, page, next_after);
}

}  // namespace store
