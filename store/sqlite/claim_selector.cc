#include "store/sqlite/claim_selector.h"

#include "store/selector.h"
#include "store/sqlite/claim_sql.h"
#include "store/sqlite/selector_sql.h"

namespace store {

const char* ClaimStatement(const ClaimRequest& req, Placement server) {
  // Rows: fittest, packed, distributed; columns: no selector, a driving term
  // of one value, of several.
  static constexpr const char* kStatements[3][3] = {
      {sql::kClaimFittest, sql::kClaimSelectedOneValue, sql::kClaimSelectedValues},
      {sql::kClaimPacked, sql::kClaimPackedSelectedOneValue, sql::kClaimPackedSelectedValues},
      {sql::kClaimDistributed, sql::kClaimDistributedSelectedOneValue,
       sql::kClaimDistributedSelectedValues},
  };
  const ClaimForm form = ClaimFormOf(req, server);
  return kStatements[form.placement][form.candidates];
}

void BindSelector(Statement* q, const std::vector<SelectorTerm>& selector) {
  if (selector.empty()) return;
  const SelectorTerm& driving = selector[DrivingTerm(selector)];
  q->Bind(12, driving.key);
  if (driving.values.size() == 1) {
    q->Bind(13, driving.values[0]);
  } else {
    q->Bind(13, ValuesJson(driving.values));
  }
  q->Bind(14, SelectorJson(selector));
}

Status AnySelectorMatch(Db* db, const std::string& region, const std::string& pool,
                        const std::vector<SelectorTerm>& selector, bool* any) {
  StatementRef q;
  RETURN_IF_ERROR(db->Cached(sql::kAnySelectorMatch, &q));
  q->Bind(1, region);
  q->Bind(2, pool);
  BindSelector(&*q, selector);
  // The driving values as a list, even one: the statement takes a list.
  q->Bind(13, ValuesJson(selector[DrivingTerm(selector)].values));
  return q->Step(any);
}

bool TryNextShard(Outcome* outcome, bool more_shards, bool* selector_matched) {
  if (*outcome == Outcome::kNoCapacity) *selector_matched = true;
  if (*outcome != Outcome::kNoCapacity && *outcome != Outcome::kNoMatch) return false;
  if (more_shards) return true;
  if (*outcome == Outcome::kNoMatch && *selector_matched) *outcome = Outcome::kNoCapacity;
  return false;
}

}  // namespace store
